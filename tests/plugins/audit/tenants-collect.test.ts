/**
 * Issue 29, several tenants, the collection side: two Microsoft 365 tenants behind the same
 * endpoints (two fakes with their own credentials behind FakeTenantRouter), one of them failing
 * (500s then a 429 with a Retry-After of an hour, or not answering at all). The healthy tenant's
 * events are all stored with its name and its health is ok; the failing one reports its error,
 * keeps its watermark and catches up when it recovers.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FakeMicrosoft } from '../../fakes/microsoft/fake-microsoft.js';
import { directoryAudit, managementRecord } from '../../fakes/microsoft/fixtures.js';
import {
  type FakeTenantRouter,
  startTwoTenants,
  type TwoTenants,
} from '../../fakes/microsoft/tenant-router.js';
import { type AuditTestApp, auditApp } from './helpers.js';

const HOUR = 3_600_000;

let tenants: TwoTenants;
let contoso: FakeMicrosoft;
let fabrikam: FakeMicrosoft;
let router: FakeTenantRouter;
let hub: AuditTestApp | undefined;

beforeEach(async () => {
  tenants = await startTwoTenants();
  ({ contoso, fabrikam, router } = tenants);
});
afterEach(async () => {
  await hub?.close();
  hub = undefined;
  await tenants.stop();
});

function tenantEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...tenants.env,
    AUDIT_SOURCES: 'directory,exchange',
    AUDIT_FETCH_ON_START: 'false',
    AUDIT_MAX_RETRIES: '2',
    AUDIT_BACKOFF_BASE_MS: '1',
    AUDIT_BACKOFF_MAX_MS: '5',
    ...extra,
  };
}

/** The same record ids in both tenants: a guest's activity is logged in both. */
function seed(fake: FakeMicrosoft): void {
  const now = Date.now();
  for (let i = 0; i < 60; i++) fake.directoryAudits.push(directoryAudit(i, now - 2 * HOUR + i * 1000));
  fake.publish(
    'Audit.Exchange',
    [managementRecord('Audit.Exchange', 1, now - HOUR), managementRecord('Audit.Exchange', 2, now - HOUR)],
    now - 50 * 60_000,
  );
}

const stored = (tenant: string, source: string) =>
  hub!.db
    .prepare(
      'SELECT count(*) FROM audit_events e JOIN audit_tenants t ON t.id = e.tenant_id WHERE t.name = ? AND e.source = ?',
    )
    .pluck()
    .get(tenant, source) as number;

// biome-ignore lint/suspicious/noExplicitAny: the health answer's entries
async function health(): Promise<Map<string, any>> {
  const { status, body } = await hub!.json('/api/source-health');
  expect(status).toBe(200);
  // biome-ignore lint/suspicious/noExplicitAny: as above
  return new Map(body.data.map((e: any) => [`${e.tenant}/${e.source}`, e]));
}

async function fetchNow(): Promise<void> {
  expect(hub!.collector.requestFetch('admin')).toBe('queued');
  await hub!.collector.idle();
}

describe('several tenants: collection', () => {
  it('stores the healthy tenant while the other answers 500s then a long Retry-After, and catches the other up', async () => {
    hub = await auditApp(tenantEnv());
    seed(contoso);
    seed(fabrikam);
    fabrikam.fail('directoryAudits', { status: 500 }, 2);
    fabrikam.fail('directoryAudits', { status: 429, retryAfter: '3600' });
    fabrikam.fail('subscriptions', { status: 429, retryAfter: '3600' });

    await fetchNow();

    expect(stored('contoso', 'directory')).toBe(60);
    expect(stored('contoso', 'exchange')).toBe(2);
    expect(stored('fabrikam', 'directory')).toBe(0);
    let h = await health();
    expect([...h.keys()].sort()).toEqual([
      'contoso/directory',
      'contoso/exchange',
      'fabrikam/directory',
      'fabrikam/exchange',
    ]);
    expect(h.get('contoso/directory')).toMatchObject({ status: 'ok', consecutive_failures: 0, error: null });
    expect(h.get('contoso/exchange')).toMatchObject({ status: 'ok', consecutive_failures: 0 });
    expect(h.get('contoso/directory').watermark).not.toBeNull();
    expect(h.get('fabrikam/directory')).toMatchObject({
      status: 'throttled',
      consecutive_failures: 1,
      watermark: null,
    });
    expect(h.get('fabrikam/directory').error).toMatch(/429/);
    expect(h.get('fabrikam/exchange')).toMatchObject({ status: 'throttled', watermark: null });
    // Each tenant asked for its own token with its own credentials (the fakes refuse others').
    expect(contoso.tokensIssued).toBe(2);
    expect(fabrikam.tokensIssued).toBe(2);
    const metrics = await hub.registry.metrics();
    expect(metrics).toMatch(/meshhub_audit_source_up\{source="directory",tenant="contoso"\} 1/);
    expect(metrics).toMatch(/meshhub_audit_source_up\{source="directory",tenant="fabrikam"\} 0/);
    expect(metrics).toMatch(
      /meshhub_audit_records_total\{source="directory",outcome="stored",tenant="contoso"\} 60/,
    );

    // Recovered: it catches up from where it was (the same record ids stored again, as its own).
    await fetchNow();
    expect(stored('fabrikam', 'directory')).toBe(60);
    expect(stored('fabrikam', 'exchange')).toBe(2);
    expect(stored('contoso', 'directory')).toBe(60);
    h = await health();
    expect(h.get('fabrikam/directory')).toMatchObject({ status: 'ok', consecutive_failures: 0, error: null });
    expect(h.get('fabrikam/exchange')).toMatchObject({ status: 'ok' });
    const { body } = await hub.json('/api/events?limit=5');
    expect(new Set(body.data.map((e: { tenant: string }) => e.tenant)).size).toBeGreaterThan(0);
  });

  it('never waits for a tenant that does not answer', async () => {
    // The hanging tenant is listed first: nothing queues the healthy one behind it.
    hub = await auditApp(tenantEnv({ AUDIT_SOURCES: 'directory', AUDIT_TENANTS: 'fabrikam,contoso' }));
    seed(contoso);
    seed(fabrikam);
    router.hold(fabrikam);
    expect(hub.collector.requestFetch('admin')).toBe('queued');

    // Contoso completes while fabrikam's token request is still unanswered.
    await expect.poll(() => stored('contoso', 'directory')).toBe(60);
    await expect.poll(async () => (await health()).get('contoso/directory').status).toBe('ok');
    expect(router.waiting.get(fabrikam.tenantId)).toBeGreaterThan(0);
    expect((await health()).get('fabrikam/directory')).toMatchObject({ status: 'running', watermark: null });
    expect(stored('fabrikam', 'directory')).toBe(0);

    router.release(fabrikam);
    await hub.collector.idle();
    expect(stored('fabrikam', 'directory')).toBe(60);
    expect((await health()).get('fabrikam/directory')).toMatchObject({ status: 'ok' });
  });

  it('refuses another tenant’s secret: only that tenant fails', async () => {
    hub = await auditApp(
      tenantEnv({ AUDIT_SOURCES: 'directory', AUDIT_FABRIKAM_CLIENT_SECRET: contoso.clientSecret }),
    );
    seed(contoso);
    seed(fabrikam);
    await fetchNow();
    const h = await health();
    expect(h.get('contoso/directory')).toMatchObject({ status: 'ok' });
    expect(h.get('fabrikam/directory')).toMatchObject({ status: 'error', consecutive_failures: 1 });
    expect(h.get('fabrikam/directory').error).toMatch(/invalid_client/);
    expect(h.get('fabrikam/directory').error).not.toContain(contoso.clientSecret);
    expect(stored('contoso', 'directory')).toBe(60);
  });
});
