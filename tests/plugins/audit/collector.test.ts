/**
 * The collector against the loopback fake of Microsoft's endpoints: paging, throttling (429 with
 * and without Retry-After, 503, 403 AF429), late events, duplicates across pages and blobs,
 * failing blobs and upstream garbage. Every event must end up stored exactly once.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeMicrosoft } from '../../fakes/microsoft/fake-microsoft.js';
import { directoryAudit, intuneAuditEvent, managementRecord } from '../../fakes/microsoft/fixtures.js';
import { type AuditTestApp, auditApp, capturingLogger } from './helpers.js';

const MIN = 60_000;
const HOUR = 60 * MIN;

let fake: FakeMicrosoft;
let hub: AuditTestApp;

beforeEach(async () => {
  fake = new FakeMicrosoft();
  await fake.start();
});
afterEach(async () => {
  await hub?.close();
  await fake.stop();
});

async function fetchNow(sources?: string[]): Promise<void> {
  const outcome = hub.collector.requestFetch('admin', sources as never);
  expect(outcome).toBe('queued');
  await hub.collector.idle();
}

const count = (sql: string, ...params: unknown[]) =>
  hub.db
    .prepare(sql)
    .pluck()
    .get(...params) as number;
const health = (source: string) => hub.repos.sources.get(source as never)!;

describe('collector against the Microsoft fake', () => {
  it('stores every event exactly once through paging, throttling, late events, duplicates and failing blobs', async () => {
    hub = await auditApp({ ...fake.env(), AUDIT_MAX_RETRIES: '3' });
    const now = Date.now();
    // Directory: 230 events over 5 pages of 50; the first requests are throttled three ways.
    for (let i = 0; i < 230; i++) fake.directoryAudits.push(directoryAudit(i, now - 3 * HOUR + i * 10_000));
    fake.fail('directoryAudits', { status: 429, retryAfter: '1' });
    fake.fail('directoryAudits', { status: 429 });
    fake.fail('directoryAudits', { status: 503 });
    // Device management: one event by an application, one by a person.
    fake.intuneEvents.push(
      intuneAuditEvent(1, now - HOUR, { actorType: 'Application', app: 'Contoso MDM Sync' }),
    );
    fake.intuneEvents.push(intuneAuditEvent(2, now - HOUR));
    // Exchange: the same record in two blobs; one blob throttled with AF429 past every retry.
    const shared = managementRecord('Audit.Exchange', 1, now - 2 * HOUR);
    fake.publish(
      'Audit.Exchange',
      [shared, managementRecord('Audit.Exchange', 2, now - 2 * HOUR)],
      now - 90 * MIN,
    );
    fake.publish(
      'Audit.Exchange',
      [shared, managementRecord('Audit.Exchange', 3, now - HOUR)],
      now - 80 * MIN,
    );
    const throttledBlob = fake.publish(
      'Audit.Exchange',
      [managementRecord('Audit.Exchange', 4, now - HOUR)],
      now - 70 * MIN,
    );
    fake.failBlob(throttledBlob, { af429: true }, 4);
    // SharePoint: a blob that answers garbage once; 45 blobs so the listing pages (NextPageUri).
    const garbageBlob = fake.publish(
      'Audit.SharePoint',
      [managementRecord('Audit.SharePoint', 100, now - HOUR)],
      now - 60 * MIN,
    );
    fake.failBlob(garbageBlob, { garbage: true });
    for (let i = 0; i < 45; i++) {
      fake.publish(
        'Audit.SharePoint',
        [managementRecord('Audit.SharePoint', 200 + i, now - HOUR)],
        now - 50 * MIN + i * 1000,
      );
    }
    // Teams: one good record, one without a timestamp, one that is not an object.
    fake.publish(
      'Audit.General',
      [managementRecord('Audit.General', 300, now - HOUR), { Id: 'no-time', Operation: 'X' }, 42],
      now - 40 * MIN,
    );

    await fetchNow();

    expect(count("SELECT count(*) FROM audit_events WHERE source = 'directory'")).toBe(230);
    expect(count("SELECT count(*) FROM audit_events WHERE source = 'device_management'")).toBe(2);
    expect(count("SELECT count(*) FROM audit_events WHERE source = 'exchange'")).toBe(3);
    expect(count("SELECT count(*) FROM audit_events WHERE source = 'sharepoint'")).toBe(45);
    expect(count("SELECT count(*) FROM audit_events WHERE source = 'teams'")).toBe(1);
    expect(health('directory')).toMatchObject({
      status: 'ok',
      events_fetched: 230,
      events_stored: 230,
      throttled: 2,
    });
    // AF429 past every retry ends the Exchange run; the blob waits for the next run.
    expect(health('exchange')).toMatchObject({ status: 'throttled', duplicates: 1 });
    expect(health('exchange').last_error).toMatch(/403 AF429/);
    expect(health('sharepoint')).toMatchObject({ status: 'error', malformed: 1 });
    expect(health('teams')).toMatchObject({ status: 'ok', malformed: 2, events_stored: 1 });
    expect(hub.repos.sources.pendingBlobCount('exchange')).toBe(1);

    // Late events: a directory event that happened 20 minutes ago shows up only now, plus a
    // duplicate of one already stored; a new Exchange blob of old events appears.
    fake.directoryAudits.push(
      directoryAudit(1000, Date.now() - 20 * MIN),
      directoryAudit(5, now - 3 * HOUR + 50_000),
    );
    fake.publish(
      'Audit.Exchange',
      [managementRecord('Audit.Exchange', 5, now - 5 * HOUR), shared],
      Date.now() - 1000,
    );
    await fetchNow();

    expect(count("SELECT count(*) FROM audit_events WHERE source = 'directory'")).toBe(231);
    expect(count("SELECT count(*) FROM audit_events WHERE source = 'exchange'")).toBe(5);
    expect(count("SELECT count(*) FROM audit_events WHERE source = 'sharepoint'")).toBe(46);
    expect(hub.repos.sources.pendingBlobCount('exchange')).toBe(0);
    expect(health('exchange').status).toBe('ok');
    expect(health('sharepoint').status).toBe('ok');
    // Exactly once: no (source, key) twice, and every upstream id present.
    expect(
      count(
        'SELECT count(*) FROM (SELECT source, source_key FROM audit_events GROUP BY 1, 2 HAVING count(*) > 1)',
      ),
    ).toBe(0);
    const ids = new Set(fake.directoryAudits.map((r) => String(r.id)));
    expect(count("SELECT count(DISTINCT source_key) FROM audit_events WHERE source = 'directory'")).toBe(
      ids.size,
    );
  });

  it('tells stored-event listeners (the later alert and SIEM hooks) about new events only', async () => {
    hub = await auditApp({ ...fake.env(), AUDIT_SOURCES: 'directory' });
    const { AuditStore } = await import('../../../plugins/audit/store/audit-store.js');
    const store = new AuditStore(() => hub.db);
    const seen: string[] = [];
    store.onStored((events) => seen.push(...events.map((e) => e.event.sourceKey)));
    fake.directoryAudits.push(directoryAudit(1, Date.now() - HOUR), directoryAudit(2, Date.now() - HOUR));
    const { normalizeRecord } = await import('../../../plugins/audit/normalize.js');
    const events = fake.directoryAudits.map((r) => {
      const out = normalizeRecord('directory', r);
      if (!out.ok) throw new Error(out.reason);
      return out.event;
    });
    await store.repos().writer.write(events);
    await store.repos().writer.write(events);
    expect(seen).toEqual(fake.directoryAudits.map((r) => r.id));
  });

  it('marks a run left "running" by a stopped hub as interrupted when the collector starts', async () => {
    hub = await auditApp({ ...fake.env(), AUDIT_SOURCES: 'directory' });
    hub.repos.sources.recordAttempt('directory', Date.now());
    await hub.collector.stop();
    await hub.collector.start();
    expect(health('directory')).toMatchObject({
      status: 'error',
      last_error: 'interrupted: the hub stopped during the run',
    });
  });

  it('names an application actor of a device-management event by the application', async () => {
    hub = await auditApp({ ...fake.env(), AUDIT_SOURCES: 'device_management' });
    fake.intuneEvents.push(
      intuneAuditEvent(1, Date.now() - HOUR, { actorType: 'Application', app: 'Contoso MDM Sync' }),
    );
    fake.intuneEvents.push(intuneAuditEvent(2, Date.now() - HOUR, { user: 'ann@contoso.com' }));
    await fetchNow();
    const { body } = await hub.json('/api/events');
    expect(body.data.map((e: { actor: string }) => e.actor).sort()).toEqual([
      'Contoso MDM Sync',
      'ann@contoso.com',
    ]);
    expect(body.data[0]).toMatchObject({
      service: 'device_management',
      operation: 'Create DeviceConfiguration',
      result: 'success',
      result_raw: 'Success',
    });
  });

  it('sends PublisherIdentifier on every Management API call and walks the window 24 hours at a time, at most 7 days back', async () => {
    hub = await auditApp({ ...fake.env(), AUDIT_SOURCES: 'sharepoint', AUDIT_INITIAL_LOOKBACK: '10d' });
    fake.contentPageSize = 2;
    for (let i = 0; i < 5; i++)
      fake.publish(
        'Audit.SharePoint',
        [managementRecord('Audit.SharePoint', i, Date.now() - 2 * HOUR)],
        Date.now() - 3 * HOUR + i,
      );
    await fetchNow();
    const calls = fake.requestsTo('management');
    expect(calls.length).toBeGreaterThan(10);
    for (const call of calls) expect(call.query.get('PublisherIdentifier')).toBe(fake.tenantId);
    const listings = fake
      .requestsTo('management', '/subscriptions/content')
      .filter((r) => !r.query.has('nextPage'));
    expect(listings.length).toBe(7);
    for (const l of listings) {
      const start = Date.parse(`${l.query.get('startTime')}Z`);
      const end = Date.parse(`${l.query.get('endTime')}Z`);
      expect(end - start).toBeLessThanOrEqual(24 * HOUR);
      expect(start).toBeGreaterThanOrEqual(Date.now() - 7 * 24 * HOUR);
    }
    expect(
      fake.requestsTo('management', '/subscriptions/content').filter((r) => r.query.has('nextPage')).length,
    ).toBe(2);
    expect(count('SELECT count(*) FROM audit_events')).toBe(5);
    expect(fake.subscriptions.get('Audit.SharePoint')).toBe('enabled');
  });

  it('keeps its watermark when a run is throttled beyond AUDIT_MAX_RETRY_AFTER, and the next run resumes', async () => {
    hub = await auditApp({ ...fake.env(), AUDIT_SOURCES: 'directory' });
    fake.directoryAudits.push(directoryAudit(1, Date.now() - HOUR));
    fake.fail('directoryAudits', { status: 429, retryAfter: '3600' });
    await fetchNow();
    expect(health('directory')).toMatchObject({
      status: 'throttled',
      watermark: null,
      consecutive_failures: 1,
    });
    expect(health('directory').last_error).toMatch(/429/);
    expect(count('SELECT count(*) FROM audit_events')).toBe(0);

    await fetchNow();
    expect(health('directory')).toMatchObject({ status: 'ok', consecutive_failures: 0 });
    expect(count('SELECT count(*) FROM audit_events')).toBe(1);
    const metrics = await hub.registry.metrics();
    expect(metrics).toMatch(/meshhub_audit_fetch_errors_total\{source="directory",kind="throttled"\} 1/);
    expect(metrics).toMatch(/meshhub_audit_source_up\{source="directory"\} 1/);
  });

  it('counts a page that is not JSON, stores nothing from it, and succeeds on the next run', async () => {
    hub = await auditApp({ ...fake.env(), AUDIT_SOURCES: 'directory', AUDIT_MAX_RETRIES: '0' });
    fake.directoryAudits.push(directoryAudit(1, Date.now() - HOUR));
    fake.fail('directoryAudits', { garbage: true });
    await fetchNow();
    expect(health('directory').status).toBe('error');
    expect(health('directory').last_error).toMatch(/not JSON/);
    await fetchNow();
    expect(health('directory').status).toBe('ok');
    expect(count('SELECT count(*) FROM audit_events')).toBe(1);
  });

  it('never follows a nextLink to another host with the token', async () => {
    hub = await auditApp({ ...fake.env(), AUDIT_SOURCES: 'directory' });
    for (let i = 0; i < 60; i++) fake.directoryAudits.push(directoryAudit(i, Date.now() - HOUR + i));
    fake.graphLinkBase = 'http://127.0.0.2:9';
    await fetchNow();
    expect(health('directory').status).toBe('error');
    expect(health('directory').last_error).toMatch(/another host/);
    expect(count('SELECT count(*) FROM audit_events')).toBe(50);
    expect(health('directory').watermark).toBeNull();
  });

  it('reports a refused client secret without revealing it, and caches tokens across runs', async () => {
    hub = await auditApp({
      ...fake.env(),
      AUDIT_SOURCES: 'directory,exchange',
      AUDIT_CLIENT_SECRET: 'wrong-secret-value',
    });
    await fetchNow();
    const row = health('directory');
    expect(row.status).toBe('error');
    expect(row.last_error).toMatch(/invalid_client AADSTS7000215/);
    expect(JSON.stringify(hub.repos.sources.all())).not.toContain('wrong-secret-value');
    await hub.close();

    hub = await auditApp({ ...fake.env(), AUDIT_SOURCES: 'directory,exchange' });
    await fetchNow();
    await fetchNow();
    expect(fake.tokensIssued).toBe(2); // one for Graph, one for the Management API
  });

  it('fetches on start and on AUDIT_FETCH_CRON by itself', async () => {
    fake.directoryAudits.push(directoryAudit(1, Date.now() - HOUR));
    // Every second (the six-field form, seconds first), and once at start.
    hub = await auditApp({
      ...fake.env(),
      AUDIT_SOURCES: 'directory',
      AUDIT_FETCH_ON_START: 'true',
      AUDIT_FETCH_CRON: '* * * * * *',
    });
    const until = Date.now() + 10_000;
    while (fake.requestsTo('graph').length < 3 && Date.now() < until)
      await new Promise((r) => setTimeout(r, 50));
    expect(fake.requestsTo('graph').length).toBeGreaterThanOrEqual(3);
    expect(count('SELECT count(*) FROM audit_events')).toBe(1);
  });

  it('logs auth_enabled and the version at start, and never a secret or a token', async () => {
    const { log, lines } = capturingLogger();
    hub = await auditApp(
      {
        ...fake.env(),
        AUDIT_SOURCES: 'directory,exchange',
        AUTH_ENABLED: 'true',
        CORS_ORIGINS: '*',
        WEBHOOK_CLIENT_SECRET: 'webhook-secret-for-the-log-test',
      },
      { log },
    );
    const start = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'audit plugin starting');
    expect(start).toMatchObject({ auth_enabled: true, version: expect.any(String) });
    expect(lines.some((l) => l.includes('authentication is misconfigured'))).toBe(true);
    expect(lines.some((l) => String(JSON.parse(l).msg).startsWith('CORS_ORIGINS contains "*"'))).toBe(true);
    fake.directoryAudits.push(directoryAudit(1, Date.now() - HOUR));
    fake.fail('directoryAudits', {
      status: 401,
      body: { error: { code: 'InvalidAuthenticationToken', message: 'expired' } },
    });
    await fetchNow();
    const all = lines.join('\n');
    expect(all).toContain('audit fetch finished');
    expect(all).not.toContain(fake.clientSecret);
    expect(all).not.toContain('webhook-secret-for-the-log-test');
    for (const r of fake.requests) if (r.authorization) expect(all).not.toContain(r.authorization.slice(7));
  });

  it('starts a subscription again when the listing says AF20022', async () => {
    hub = await auditApp({ ...fake.env(), AUDIT_SOURCES: 'teams' });
    fake.publish(
      'Audit.General',
      [managementRecord('Audit.General', 1, Date.now() - HOUR)],
      Date.now() - 30 * MIN,
    );
    await fetchNow();
    fake.subscriptions.set('Audit.General', 'disabled');
    fake.publish(
      'Audit.General',
      [managementRecord('Audit.General', 2, Date.now() - HOUR)],
      Date.now() - 1000,
    );
    await fetchNow();
    expect(health('teams').status).toBe('ok');
    expect(count('SELECT count(*) FROM audit_events')).toBe(2);
    expect(fake.requestsTo('management', '/subscriptions/start').length).toBe(2);
  });
});
