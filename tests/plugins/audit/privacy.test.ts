/**
 * Privacy gating on every read path (spec "Privacy gating"): a caller without a role in
 * PRIVACY_SERVICE_ROLES never sees sensitive operations or gated services — not in search, a
 * single event, filter options or export — and cannot change them; a caller with the role sees all.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AuditTestApp, auditApp, idpAuditApp, jsonInit, NO_RATE_LIMITS, seed } from './helpers.js';
import { type LocalIdp, withBearer } from './idp.js';

const T0 = Date.UTC(2025, 4, 1);
let idp: LocalIdp;
let t: AuditTestApp;
let plain: string;
let privileged: string;

const SEEDED = [
  { at: T0 + 1000, service: 'Exchange', operation: 'MailItemsAccessed', actor: 'eve@contoso.com' },
  { at: T0 + 2000, service: 'Exchange', operation: 'Send', actor: 'eve@contoso.com' },
  { at: T0 + 3000, service: 'MicrosoftTeams', operation: 'MemberAdded', actor: 'eve@contoso.com' },
  { at: T0 + 4000, service: 'SharePoint', operation: 'FileAccessed', actor: 'eve@contoso.com' },
];

beforeAll(async () => {
  ({ idp, t } = await idpAuditApp({
    PRIVACY_SENSITIVE_OPERATIONS: 'mailitemsaccessed',
    PRIVACY_SERVICES: 'teams',
    PRIVACY_SERVICE_ROLES: 'Audit.Privacy',
    AUDIT_READER_ROLES: 'Audit.Reader',
    AUDIT_ADMIN_ROLES: 'Audit.Admin',
    ...NO_RATE_LIMITS,
  }));
  seed(t.repos, SEEDED);
  // An administrator of the audit data (reads, tags) without the privacy role.
  plain = await idp.token({ roles: ['Audit.Reader', 'Audit.Admin'] });
  privileged = await idp.token({ roles: ['Audit.Reader', 'Audit.Privacy'] });
});
afterAll(async () => {
  await t.close();
  await idp.stop();
});

const ops = (body: { data: Array<{ operation: string }> }) => body.data.map((e) => e.operation).sort();
const idOf = (operation: string) =>
  String(
    t.db
      .prepare(
        'SELECT e.seq FROM audit_events e JOIN audit_operations o ON o.id = e.operation_id WHERE o.name = ?',
      )
      .pluck()
      .get(operation),
  );

describe('a caller without the privacy role', () => {
  it('does not find gated events in search, even when filtering for them', async () => {
    expect(ops((await t.json('/api/events', withBearer(plain))).body)).toEqual(['FileAccessed', 'Send']);
    expect((await t.json('/api/events?operation=MailItems', withBearer(plain))).body.data).toEqual([]);
    expect((await t.json('/api/events?services=teams', withBearer(plain))).body.data).toEqual([]);
  });

  it('gets 403 for a gated event by id', async () => {
    for (const op of ['MailItemsAccessed', 'MemberAdded']) {
      const res = await t.json(`/api/events/${idOf(op)}`, withBearer(plain));
      expect(res.status).toBe(403);
      expect(res.body.detail).toMatch(/restricted/);
      expect(JSON.stringify(res.body)).not.toContain(op);
    }
  });

  it('does not see gated operations or services in the filter options', async () => {
    const { body } = await t.json('/api/filter-options', withBearer(plain));
    expect(body.services).toEqual(['exchange', 'sharepoint']);
    expect(body.operations).toEqual(['FileAccessed', 'Send']);
  });

  it('does not get gated events in CSV or JSON exports', async () => {
    const csv = await (await t.request('/api/events/export?format=csv', withBearer(plain))).text();
    expect(csv).not.toMatch(/MailItemsAccessed|MemberAdded/);
    expect(csv.trim().split('\n')).toHaveLength(3);
    const json = (await (
      await t.request('/api/events/export?format=json', withBearer(plain))
    ).json()) as Array<{
      operation: string;
    }>;
    expect(ops({ data: json })).toEqual(['FileAccessed', 'Send']);
  });

  it('cannot tag or comment on gated events, alone or in bulk', async () => {
    const before = t.db.prepare('SELECT tags, comment_count FROM audit_events ORDER BY seq').all();
    const id = idOf('MailItemsAccessed');
    expect(
      (await t.json(`/api/events/${id}/tags`, withBearer(plain, jsonInit('PATCH', { tags: ['x'] })))).status,
    ).toBe(403);
    expect(
      (await t.json(`/api/events/${id}/comments`, withBearer(plain, jsonInit('POST', { text: 'x' })))).status,
    ).toBe(403);
    const bulk = await t.json(
      '/api/events/bulk-tags',
      withBearer(plain, jsonInit('POST', { filters: { actor: 'eve' }, tags: ['x'] })),
    );
    expect(bulk.body).toMatchObject({ matched: 2, updated: 2 });
    expect(t.db.prepare('SELECT tags FROM audit_events WHERE seq = ?').pluck().get(id)).toBe('[]');
    const gatedAfter = t.db
      .prepare('SELECT tags, comment_count FROM audit_events ORDER BY seq')
      .all() as Array<{ tags: string }>;
    expect([gatedAfter[0], gatedAfter[2]]).toEqual([before[0], before[2]]);
  });
});

describe('a caller with the privacy role', () => {
  it('sees every event, option and export row', async () => {
    expect(ops((await t.json('/api/events', withBearer(privileged))).body)).toEqual([
      'FileAccessed',
      'MailItemsAccessed',
      'MemberAdded',
      'Send',
    ]);
    expect((await t.json(`/api/events/${idOf('MemberAdded')}`, withBearer(privileged))).status).toBe(200);
    const { body } = await t.json('/api/filter-options', withBearer(privileged));
    expect(body.services).toEqual(['exchange', 'sharepoint', 'teams']);
    expect(body.operations).toContain('MailItemsAccessed');
    const csv = await (await t.request('/api/events/export', withBearer(privileged))).text();
    expect(csv.trim().split('\n')).toHaveLength(5);
  });
});

describe('with AUTH_ENABLED off', () => {
  it('keeps gated events hidden from the anonymous caller', async () => {
    const open = await auditApp({
      PRIVACY_SENSITIVE_OPERATIONS: 'MailItemsAccessed',
      PRIVACY_SERVICE_ROLES: 'Audit.Privacy',
    });
    try {
      seed(open.repos, SEEDED);
      expect(ops((await open.json('/api/events')).body)).toEqual(['FileAccessed', 'MemberAdded', 'Send']);
    } finally {
      await open.close();
    }
  });
});
