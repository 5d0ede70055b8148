/**
 * Issue 23, finding 1: who reads and who changes the audit data. With AUTH_ENABLED every audit
 * data route needs a role in AUDIT_READER_ROLES (default `admin`, `auditor`) and every change, a
 * fetch, the trail and the alerts a role in AUDIT_ADMIN_ROLES (default `admin`). A messaging
 * subscriber's token, the machine roles' tokens (`device`, `ingest`, `integration`, all from the
 * hub's own issuer) and a provider token without roles get 403 problem details on every one of
 * them and change nothing; an auditor reads but cannot change; the frontend config routes stay
 * open. Role lists that are empty or name a subscriber or machine role stop the start.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAuditConfig } from '../../../plugins/audit/settings.js';
import {
  type AuditTestApp,
  idpAuditApp,
  jsonInit,
  NO_RATE_LIMITS,
  auditConfigProblems as problems,
  seed,
} from './helpers.js';
import { type LocalIdp, withBearer } from './idp.js';

const T0 = Date.UTC(2025, 4, 1);
const RULE = {
  name: 'Failed role assignment',
  severity: 'high',
  condition: { services: ['Entra ID'], result: 'failure' },
};

let idp: LocalIdp;
let t: AuditTestApp;
let admin: string;
let auditor: string;
let ruleId: string;
/** The attackers of the finding: a token the hub issues for messaging or machines, or no role at all. */
const attackers: Array<[string, string]> = [];

/** Every audit data route (reads), then every change (admin). */
const READS: Array<[string, string, unknown?]> = [
  ['GET', '/api/events'],
  ['GET', '/api/events/1'],
  ['GET', '/api/events/export?format=csv'],
  ['GET', '/api/events/export?format=json'],
  ['GET', '/api/filter-options'],
  ['GET', '/api/source-health'],
  ['POST', '/api/ask', { question: 'who added users last week?' }],
  ['GET', '/api/jobs/job-1'],
  ['POST', '/api/events/1/explain'],
  ['GET', '/api/rules'],
];
const CHANGES: Array<[string, string, unknown?]> = [
  ['PATCH', '/api/events/1/tags', { tags: ['mine'] }],
  ['POST', '/api/events/1/comments', { text: 'pwned' }],
  ['POST', '/api/events/bulk-tags', { filters: { actor: 'eve' }, tags: ['mine'], mode: 'replace' }],
  ['POST', '/api/rules', { ...RULE, name: 'Another rule' }],
  ['POST', '/api/fetch'],
  ['GET', '/api/audit-trail'],
  ['GET', '/api/alerts'],
];
const ruleRoutes = (): Array<[string, string, unknown?]> => [
  ['GET', `/api/rules/${ruleId}`],
  ['PUT', `/api/rules/${ruleId}`, { ...RULE, severity: 'low' }],
  ['DELETE', `/api/rules/${ruleId}`],
];

/** The answer, its body parsed when it is JSON (an export may be CSV). */
async function send(token: string, [method, path, body]: [string, string, unknown?]) {
  const res = await t.request(
    path,
    withBearer(token, body === undefined ? { method } : jsonInit(method, body)),
  );
  const text = await res.text();
  const json = /json/.test(res.headers.get('content-type') ?? '') && text;
  // biome-ignore lint/suspicious/noExplicitAny: problem and event bodies of many shapes
  return { status: res.status, headers: res.headers, body: (json ? JSON.parse(text) : text) as any };
}

/** What an attacker could change: tags, comments, rules, and the trail's changes. */
const state = () => ({
  events: t.db.prepare('SELECT seq, tags, comment_count FROM audit_events ORDER BY seq').all(),
  rules: t.db.prepare('SELECT id, name, severity FROM audit_alert_rules ORDER BY id').all(),
  changes: t.db.prepare('SELECT count(*) FROM audit_trail WHERE status < 400').pluck().get(),
});

beforeAll(async () => {
  ({ idp, t } = await idpAuditApp({ AI_FEATURES_ENABLED: 'true', ...NO_RATE_LIMITS }));
  seed(t.repos, [
    { at: T0 + 1000, operation: 'MailItemsAccessed', actor: 'eve@contoso.com' },
    { source: 'directory', at: T0 + 2000, operation: 'Add user', actor: 'eve@contoso.com' },
  ]);
  admin = await t.hubToken('root', ['admin']);
  auditor = await t.hubToken('carol', ['auditor']);
  attackers.push(
    ['a messaging subscriber', await t.hubToken('alice', ['subscriber'])],
    ['a device', await t.hubToken('sensor-1', ['device'])],
    ['an ingest client', await t.hubToken('gateway', ['ingest'])],
    ['Home Assistant', await t.hubToken('homeassistant', ['integration'])],
    ['a provider token without roles', await idp.token({ roles: [] })],
  );
  // Data an attacker would like to change: a tag, a comment, a rule.
  expect((await send(admin, ['PATCH', '/api/events/1/tags', { tags: ['reviewed'] }])).status).toBe(200);
  expect((await send(admin, ['POST', '/api/events/1/comments', { text: 'known task' }])).status).toBe(201);
  const created = await send(admin, ['POST', '/api/rules', RULE]);
  expect(created.status).toBe(201);
  ruleId = created.body.id;
});
afterAll(async () => {
  await t?.close();
  await idp?.stop();
});

describe('tokens the hub issues for messaging and machines', () => {
  it('get 403 problem details on every audit route, and change nothing', async () => {
    const before = state();
    for (const [who, token] of attackers) {
      for (const route of [...READS, ...CHANGES, ...ruleRoutes()]) {
        const res = await send(token, route);
        expect(res.status, `${who}: ${route[0]} ${route[1]}`).toBe(403);
        expect(res.headers.get('content-type')).toBe('application/problem+json');
        expect(res.body).toMatchObject({ status: 403, title: 'Forbidden' });
        expect(res.body.detail).toMatch(/^your account is not allowed to (read|change) the audit data/);
        expect(['read', 'admin']).toContain(res.body.access);
      }
    }
    expect(state()).toEqual(before);
    const tags = await t.json('/api/events/1', withBearer(admin));
    expect(tags.body.tags).toEqual(['reviewed']);
    expect(tags.body.comments.map((c: { text: string }) => c.text)).toEqual(['known task']);
  });

  it('say which access was missing: reading for the data, AUDIT_ADMIN_ROLES for the admin routes', async () => {
    const [, subscriber] = attackers[0]!;
    expect((await send(subscriber, ['GET', '/api/events'])).body).toMatchObject({
      access: 'read',
      roles: ['admin', 'auditor'],
      detail: 'your account is not allowed to read the audit data (it needs a role in AUDIT_READER_ROLES)',
    });
    expect((await send(subscriber, ['POST', '/api/fetch'])).body).toMatchObject({
      access: 'admin',
      roles: ['admin'],
    });
  });

  it('are counted as refusals in the trail', async () => {
    const refusals = t.db
      .prepare("SELECT count(*) FROM audit_trail WHERE status = 403 AND username = 'alice'")
      .pluck()
      .get() as number;
    expect(refusals).toBeGreaterThan(0);
  });
});

describe('an auditor (AUDIT_READER_ROLES)', () => {
  it('reads every audit data route', async () => {
    for (const route of [...READS, ruleRoutes()[0]!]) {
      const res = await send(auditor, route);
      // The job does not exist (404): the role check let the caller through.
      expect(res.status, `${route[0]} ${route[1]}`).toBe(route[1].startsWith('/api/jobs') ? 404 : 200);
    }
    expect((await send(auditor, ['GET', '/api/source-health'])).body.fetch_allowed).toBe(false);
  });

  it('cannot tag, comment, bulk-tag, write rules, fetch, or read the trail and alerts: 403, nothing changed', async () => {
    const before = state();
    for (const route of [...CHANGES, ...ruleRoutes().slice(1)]) {
      const res = await send(auditor, route);
      expect(res.status, `${route[0]} ${route[1]}`).toBe(403);
      expect(res.body).toMatchObject({
        access: 'admin',
        roles: ['admin'],
        detail:
          'your account is not allowed to change the audit data, fetch or read the trail (it needs a role in AUDIT_ADMIN_ROLES)',
      });
    }
    expect(state()).toEqual(before);
    expect((await send(auditor, ['GET', `/api/rules/${ruleId}`])).body).toMatchObject({
      name: RULE.name,
      severity: 'high',
    });
  });
});

describe('an administrator (AUDIT_ADMIN_ROLES)', () => {
  it('changes and fetches (409 here: collection is not configured), and may fetch in the console', async () => {
    expect((await send(admin, ['GET', '/api/source-health'])).body.fetch_allowed).toBe(true);
    expect((await send(admin, ['POST', '/api/fetch'])).status).toBe(409);
    expect((await send(admin, ['GET', '/api/audit-trail'])).status).toBe(200);
  });
});

describe('the frontend config routes', () => {
  it('stay open to every caller', async () => {
    for (const path of ['/api/config/auth', '/api/config/features']) {
      expect((await t.json(path)).status).toBe(200);
      expect((await t.json(path, withBearer(attackers[0]![1]))).status).toBe(200);
    }
  });
});

describe('AUDIT_READER_ROLES and AUDIT_ADMIN_ROLES', () => {
  it('default to admin, auditor and admin', () => {
    expect(loadAuditConfig({}).auth).toMatchObject({
      readerRoles: ['admin', 'auditor'],
      adminRoles: ['admin'],
      allowAnonymous: false,
    });
  });

  it('refuse, in one line naming the setting, subscriber and machine roles', () => {
    expect(problems({ AUDIT_READER_ROLES: 'auditor,subscriber' })).toEqual([
      'AUDIT_READER_ROLES: must not name subscriber: messaging subscribers and machine accounts (subscriber, device, ingest, integration) never read audit data; give people a role of their own, such as auditor (got "auditor,subscriber")',
    ]);
    const both = problems({ AUDIT_READER_ROLES: 'device,Ingest', AUDIT_ADMIN_ROLES: 'integration' });
    expect(both.map((p) => p.split(':')[0])).toEqual(['AUDIT_READER_ROLES', 'AUDIT_ADMIN_ROLES']);
    expect(both[0]).toMatch(/^AUDIT_READER_ROLES: must not name device, Ingest: /);
    for (const p of both) expect(p).not.toContain('\n');
  });

  it('refuse an empty list: it must never mean "anyone"', () => {
    expect(problems({ AUDIT_ADMIN_ROLES: ',' })).toEqual([
      'AUDIT_ADMIN_ROLES: must name at least one role (leave it unset for the default) (got ",")',
    ]);
  });
});
