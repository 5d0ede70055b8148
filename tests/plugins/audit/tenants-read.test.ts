/**
 * Issue 29, several tenants, the read side: the `tenants` filter on search, export and
 * filter-options; AUDIT_ROLE_TENANTS limiting a role to one tenant on every read path (search,
 * single event, tags, comments, bulk tags, export, filter-options, alerts, ask and explain), with
 * real tokens over HTTP; alert rules limited to a tenant, their webhook, Teams and Slack payloads
 * saying the tenant; an ask naming a tenant. Events of three tenants are stored through the
 * writer as the collector would store them.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AlertActor } from '../../../plugins/audit/alerts/alert-actor.js';
import { loadAuditConfig } from '../../../plugins/audit/settings.js';
import { type FakeChatCompletions, startFakeChatCompletions } from '../../fakes/llm/fake-chat-completions.js';
import { waitFor } from '../../helpers/hub.js';
import {
  type AuditTestApp,
  auditConfigProblems,
  idpAuditApp,
  jsonInit,
  llmEnv,
  NO_RATE_LIMITS,
  seed,
} from './helpers.js';
import { type LocalIdp, withBearer } from './idp.js';

const HOUR = 3_600_000;
const now = Date.now();
let idp: LocalIdp;
let t: AuditTestApp;
let llm: FakeChatCompletions;
let hooks: Server;
const received: Array<{ path: string; body: unknown }> = [];
let everyone: string;
let contosoOnly: string;

/** Contoso's, Fabrikam's and Northwind's events: each tenant's actors are at its own domain. */
const EVENTS = ['contoso', 'fabrikam', 'northwind'].flatMap((tenant, k) =>
  Array.from({ length: 4 }, (_, i) => ({
    tenant,
    source: 'directory' as const,
    at: now - (k * 4 + i + 1) * HOUR,
    operation: i === 0 ? 'Delete user' : 'Add user',
    result: i < 2 ? 'failure' : 'success',
    actor: `user${i}@${tenant}.com`,
  })),
);

beforeAll(async () => {
  llm = await startFakeChatCompletions();
  hooks = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body: JSON.parse(Buffer.concat(chunks).toString()) });
      res.end();
    });
  });
  await new Promise<void>((r) => hooks.listen(0, '127.0.0.1', r));
  const hookBase = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}`;
  ({ idp, t } = await idpAuditApp({
    AUDIT_READER_ROLES: 'Audit.Reader',
    AUDIT_ADMIN_ROLES: 'Audit.Admin,Contoso.Admin',
    AUDIT_ROLE_TENANTS: 'Contoso.Admin:contoso',
    ALERTS_ENABLED: 'true',
    ALERT_WEBHOOK_URL: `${hookBase}/webhook`,
    ALERT_TEAMS_WEBHOOK_URL: `${hookBase}/teams`,
    ALERT_SLACK_WEBHOOK_URL: `${hookBase}/slack`,
    ALERT_WEBHOOK_MAX_RETRIES: '0',
    ...llmEnv(llm.baseUrl),
    ...NO_RATE_LIMITS,
  }));
  // The test's writer stands in for the collector's: what it stores is evaluated by the alert rules.
  const alerts = t.actors.find((a) => a.name === 'audit-alerts') as AlertActor;
  t.repos.writer.onStored(alerts.engine.onStored);
  everyone = await idp.token({ roles: ['Audit.Reader', 'Audit.Admin'] });
  contosoOnly = await idp.token({ roles: ['Contoso.Admin'] });
});
afterAll(async () => {
  await t.close();
  await idp.stop();
  await llm.stop();
  hooks.closeAllConnections();
  await new Promise((r) => hooks.close(r));
});
afterEach(() => llm.reset());

const as = (token: string, init: RequestInit = {}) => withBearer(token, init);
const tenantsOf = (body: { data: Array<{ tenant: string }> }) =>
  [...new Set(body.data.map((e) => e.tenant))].sort();
const idOf = (tenant: string) =>
  String(
    t.db
      .prepare(
        'SELECT e.seq FROM audit_events e JOIN audit_tenants n ON n.id = e.tenant_id WHERE n.name = ? LIMIT 1',
      )
      .pluck()
      .get(tenant),
  );

describe('the tenants filter', () => {
  beforeAll(() => seed(t.repos, EVENTS));

  it('narrows search (both directions), export and bulk tags to the tenants named', async () => {
    const all = await t.json('/api/events?limit=100', as(everyone));
    expect(tenantsOf(all.body)).toEqual(['contoso', 'fabrikam', 'northwind']);
    const two = await t.json('/api/events?tenants=contoso&tenants=Northwind&limit=3', as(everyone));
    expect(two.status).toBe(200);
    expect(two.body.data.map((e: { tenant: string }) => e.tenant)).toEqual(['contoso', 'contoso', 'contoso']);
    const older = await t.json(
      `/api/events?tenants=contoso,northwind&limit=3&cursor=${two.body.next_cursor}`,
      as(everyone),
    );
    expect(older.body.data.map((e: { tenant: string }) => e.tenant)).toEqual([
      'contoso',
      'northwind',
      'northwind',
    ]);
    const back = await t.json(
      `/api/events?tenants=contoso,northwind&limit=3&cursor=${older.body.prev_cursor}`,
      as(everyone),
    );
    expect(back.body.data).toEqual(two.body.data);
    // With another filter too.
    const failures = await t.json('/api/events?tenants=fabrikam&result=failure', as(everyone));
    expect(failures.body.data).toHaveLength(2);
    expect(tenantsOf(failures.body)).toEqual(['fabrikam']);

    const csv = await (await t.request('/api/events/export?tenants=fabrikam', as(everyone))).text();
    const lines = csv.trim().split('\r\n');
    expect(lines[0]!.endsWith(',source,source_id,tenant')).toBe(true);
    expect(lines).toHaveLength(5);
    expect(lines.slice(1).every((l) => l.endsWith(',fabrikam'))).toBe(true);
    const json = (await (
      await t.request('/api/events/export?format=json&tenants=northwind', as(everyone))
    ).json()) as Array<{ tenant: string }>;
    expect(tenantsOf({ data: json })).toEqual(['northwind']);
  });

  it('matches nothing for a tenant it does not know, and names a malformed one', async () => {
    const unknown = await t.json('/api/events?tenants=tailspin', as(everyone));
    expect(unknown.status).toBe(200);
    expect(unknown.body.data).toEqual([]);
    const bad = await t.json('/api/events?tenants=Bad%20Name!', as(everyone));
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body.errors)).toMatch(/tenants.*short name/);
  });

  it('lists the tenants in the filter options', async () => {
    const { body } = await t.json('/api/filter-options', as(everyone));
    expect(body.tenants).toEqual(['contoso', 'fabrikam', 'northwind']);
  });
});

describe('a role limited to one tenant (AUDIT_ROLE_TENANTS)', () => {
  it('never meets another tenant on any read path', async () => {
    const search = await t.json('/api/events?limit=100', as(contosoOnly));
    expect(search.body.data).toHaveLength(4);
    expect(tenantsOf(search.body)).toEqual(['contoso']);
    // Asking for the hidden tenant by name finds nothing either.
    expect((await t.json('/api/events?tenants=fabrikam', as(contosoOnly))).body.data).toEqual([]);

    const hidden = idOf('fabrikam');
    const event = await t.json(`/api/events/${hidden}`, as(contosoOnly));
    expect(event.status).toBe(404);
    expect(JSON.stringify(event.body)).not.toContain('fabrikam');
    expect((await t.json(`/api/events/${idOf('contoso')}`, as(contosoOnly))).status).toBe(200);

    const tags = await t.json(
      `/api/events/${hidden}/tags`,
      as(contosoOnly, jsonInit('PATCH', { tags: ['x'] })),
    );
    expect(tags.status).toBe(404);
    const comment = await t.json(
      `/api/events/${hidden}/comments`,
      as(contosoOnly, jsonInit('POST', { text: 'hi' })),
    );
    expect(comment.status).toBe(404);
    const untouched = await t.json(`/api/events/${hidden}`, as(everyone));
    expect(untouched.body).toMatchObject({ tags: [], comments: [] });

    const bulk = await t.json(
      '/api/events/bulk-tags',
      as(contosoOnly, jsonInit('POST', { filters: { actor: 'user1@' }, tags: ['seen'], mode: 'append' })),
    );
    expect(bulk.body.matched).toBe(1);
    const tagged = await t.json('/api/events?include_tags=seen', as(everyone));
    expect(tenantsOf(tagged.body)).toEqual(['contoso']);

    const csv = await (await t.request('/api/events/export', as(contosoOnly))).text();
    expect(csv).not.toMatch(/fabrikam|northwind/);
    expect(csv.trim().split('\r\n')).toHaveLength(5);
    const json = await (await t.request('/api/events/export?format=json', as(contosoOnly))).text();
    expect(json).not.toMatch(/fabrikam|northwind/);

    const options = await t.json('/api/filter-options', as(contosoOnly));
    expect(options.body.tenants).toEqual(['contoso']);
    expect(JSON.stringify(options.body)).not.toMatch(/fabrikam|northwind/);

    const ask = await t.json(
      '/api/ask',
      as(contosoOnly, jsonInit('POST', { question: 'who deleted users in the last 2 days' })),
    );
    expect(ask.status).toBe(200);
    // Contoso's four user events, not the twelve of all three tenants.
    expect(ask.body.total_matched).toBe(4);
    expect(JSON.stringify(ask.body)).not.toMatch(/fabrikam|northwind/);
    expect(JSON.stringify(llm.requests.map((r) => r.body))).not.toMatch(/fabrikam|northwind/);
    // Naming the hidden tenant in the question does not reach it.
    const named = await t.json(
      '/api/ask',
      as(contosoOnly, jsonInit('POST', { question: 'failures in fabrikam last week' })),
    );
    expect(JSON.stringify(named.body.events)).not.toMatch(/fabrikam/);

    const explain = await t.json(`/api/events/${hidden}/explain`, as(contosoOnly, { method: 'POST' }));
    expect(explain.status).toBe(404);
  });

  it('sees every tenant when it also holds an unlimited audit role', async () => {
    const both = await idp.token({ roles: ['Contoso.Admin', 'Audit.Reader'] });
    expect(tenantsOf((await t.json('/api/events?limit=100', as(both))).body)).toEqual([
      'contoso',
      'fabrikam',
      'northwind',
    ]);
  });
});

describe('an ask naming a tenant', () => {
  it('filters on the tenant the question names, and says so', async () => {
    const { status, body } = await t.json(
      '/api/ask',
      as(everyone, jsonInit('POST', { question: 'failed sign-ins in fabrikam in the last 2 days' })),
    );
    expect(status).toBe(200);
    expect(body.query_info.filters).toContainEqual({
      field: 'tenants',
      value: ['fabrikam'],
      source: 'question',
      because: 'fabrikam',
    });
    expect(body.total_matched).toBe(2);
    expect(tenantsOf({ data: body.events })).toEqual(['fabrikam']);
  });
});

describe('an alert rule limited to a tenant', () => {
  it('fires only for its tenant; the alert, webhook, Teams card and Slack blocks say the tenant', async () => {
    const rule = await t.json(
      '/api/rules',
      as(
        everyone,
        jsonInit('POST', {
          name: 'Northwind deletions',
          condition: { tenants: 'northwind', operation: { equals: 'Remove user' } },
        }),
      ),
    );
    expect(rule.status).toBe(201);
    expect(rule.body.condition.tenants).toEqual(['northwind']);
    seed(t.repos, [
      {
        tenant: 'contoso',
        source: 'directory',
        at: now - 60_000,
        operation: 'Remove user',
        actor: 'x@contoso.com',
      },
      {
        tenant: 'northwind',
        source: 'directory',
        at: now - 30_000,
        operation: 'Remove user',
        actor: 'y@northwind.com',
      },
    ]);
    const alerts = await t.json('/api/alerts', as(everyone));
    expect(alerts.body.data).toHaveLength(1);
    expect(alerts.body.data[0].event).toMatchObject({ tenant: 'northwind', actor: 'y@northwind.com' });
    const paths = ['/webhook', '/teams', '/slack'];
    await waitFor(
      () => paths.every((p) => received.some((r) => r.path === p)) || undefined,
      15_000,
      'all three',
    );
    const body = (path: string) => JSON.stringify(received.find((r) => r.path === path)!.body);
    expect(JSON.parse(body('/webhook'))).toMatchObject({ event: { tenant: 'northwind' } });
    expect(body('/teams')).toMatch(/"title":"Tenant","value":"northwind"/);
    expect(body('/slack')).toMatch(/\*Tenant\*\\nnorthwind/);

    // The Contoso-only administrator does not see Northwind's alert.
    const limited = await t.json('/api/alerts', as(contosoOnly));
    expect(limited.body.data).toEqual([]);
    const one = await t.json(`/api/alerts/${alerts.body.data[0].id}`, as(contosoOnly));
    expect(one.status).toBe(404);
  });

  it('refuses a tenant that is not a short name, naming the field', async () => {
    const res = await t.json(
      '/api/rules',
      as(everyone, jsonInit('POST', { name: 'Bad', condition: { tenants: ['Not A Tenant'] } })),
    );
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toMatch(/condition\.tenants\.0/);
  });
});

describe('AUDIT_ROLE_TENANTS at start', () => {
  it('names the setting and each bad entry, in one plain line', () => {
    expect(auditConfigProblems({ AUDIT_ROLE_TENANTS: 'auditor:contoso,msp-tier1' })).toEqual([
      expect.stringMatching(/^AUDIT_ROLE_TENANTS: expected role:tenant entries .*bad: "msp-tier1"( |$)/),
    ]);
    expect(auditConfigProblems({ AUDIT_ROLE_TENANTS: 'auditor:Contoso Corp' })[0]).toMatch(
      /^AUDIT_ROLE_TENANTS: .*bad: "auditor:Contoso Corp"( |$)/,
    );
    expect(auditConfigProblems({ AUDIT_ROLE_TENANTS: 'helpdesk:contoso' })).toEqual([
      expect.stringMatching(
        /^AUDIT_ROLE_TENANTS: names helpdesk, not in AUDIT_READER_ROLES or AUDIT_ADMIN_ROLES; limit only the roles that read audit data/,
      ),
    ]);
    const ok = loadAuditConfig({ AUDIT_ROLE_TENANTS: 'auditor:contoso+fabrikam,admin:contoso' });
    expect([...ok.privacy.roleTenants]).toEqual([
      ['auditor', ['contoso', 'fabrikam']],
      ['admin', ['contoso']],
    ]);
  });
});
