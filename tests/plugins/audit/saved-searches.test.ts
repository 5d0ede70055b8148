/**
 * Saved searches (issue 29) over the audit API on a loopback socket, with AUTH_ENABLED and a
 * local identity provider: two readers of different roles, an audit admin. A private saved
 * search is its owner's alone (anyone else gets the 404 a missing one gets); a shared one is seen
 * by the role's holders and the admins, changed by its owner and the admins; running one answers
 * as `GET /api/events` does, a relative range counted from the moment it runs. Bad input on every
 * route is a 4xx problem and changes nothing; an alert rule may use a saved search its author can
 * see, and the saved search cannot be deleted under it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AuditTestApp,
  idpAuditApp,
  jsonInit,
  NO_RATE_LIMITS,
  seed,
  serveOnLoopback,
} from './helpers.js';
import { type LocalIdp, withBearer } from './idp.js';

const NOW = Date.now();
const M = 60_000;

let idp: LocalIdp;
let t: AuditTestApp;
let base: string;
let closeServer: () => Promise<void>;
const tokens: Record<string, string> = {};

// biome-ignore lint/suspicious/noExplicitAny: problem and saved-search bodies of many shapes
type Answer = { status: number; type: string; body: any };

async function call(who: string, method: string, path: string, body?: unknown): Promise<Answer> {
  const init = body === undefined ? { method } : jsonInit(method, body);
  const res = await fetch(`${base}${path}`, withBearer(tokens[who]!, init));
  const text = await res.text();
  return {
    status: res.status,
    type: res.headers.get('content-type') ?? '',
    body: text ? JSON.parse(text) : undefined,
  };
}

const table = () => t.db.prepare('SELECT * FROM audit_saved_searches ORDER BY id').all();

beforeAll(async () => {
  ({ idp, t } = await idpAuditApp({
    ...NO_RATE_LIMITS,
    AUDIT_READER_ROLES: 'auditor,helpdesk',
    // Mail is for auditors (and admins) only: the helpdesk does not see it, saved search or not.
    PRIVACY_SERVICES: 'Exchange',
    PRIVACY_SERVICE_ROLES: 'auditor',
  }));
  const served = await serveOnLoopback(t);
  base = served.base;
  closeServer = served.close;
  seed(t.repos, [
    { at: NOW - 30 * M, operation: 'MailItemsAccessed', actor: 'eve@contoso.com' },
    { at: NOW - 120 * M, operation: 'MailItemsAccessed', actor: 'eve@contoso.com' },
    { at: NOW - 20 * M, operation: 'Send', actor: 'bob@contoso.com' },
    {
      source: 'directory',
      at: NOW - 10 * M,
      operation: 'Add member to role',
      actor: 'eve@contoso.com',
      result: 'failure',
    },
  ]);
  tokens.alice = await idp.token({
    sub: 'alice-1',
    preferred_username: 'alice@contoso.com',
    roles: ['auditor'],
  });
  tokens.bob = await idp.token({ sub: 'bob-1', preferred_username: 'bob@contoso.com', roles: ['auditor'] });
  tokens.dave = await idp.token({
    sub: 'dave-1',
    preferred_username: 'dave@contoso.com',
    roles: ['helpdesk'],
  });
  tokens.root = await idp.token({ sub: 'root-1', preferred_username: 'root@contoso.com', roles: ['admin'] });
});
afterAll(async () => {
  await closeServer?.();
  await t?.close();
  await idp?.stop();
});

describe('saved searches', () => {
  let privateId: string;
  let sharedId: string;

  it('are created private or shared with a role, and listed for those who may see them', async () => {
    const mine = await call('alice', 'POST', '/api/saved-searches', {
      name: 'Eve’s mail, last hour',
      filters: { actor: 'eve', services: ['Exchange'], last: '1h' },
    });
    expect(mine.status).toBe(201);
    expect(mine.body).toMatchObject({
      name: 'Eve’s mail, last hour',
      owner: 'alice@contoso.com',
      mine: true,
      can_change: true,
      shared_with: null,
      filters: { actor: 'eve', services: ['Exchange'], last: '1h' },
    });
    privateId = mine.body.id;
    const shared = await call('alice', 'POST', '/api/saved-searches', {
      name: 'Failed role changes',
      shared_with: 'helpdesk',
      filters: { services: 'Entra ID', result: 'failure' },
    });
    expect(shared.status).toBe(201);
    sharedId = shared.body.id;

    const names = async (who: string) =>
      (await call(who, 'GET', '/api/saved-searches')).body.data.map((s: { name: string }) => s.name);
    expect(await names('alice')).toEqual(['Eve’s mail, last hour', 'Failed role changes']);
    expect(await names('bob')).toEqual([]);
    expect(await names('dave')).toEqual(['Failed role changes']);
    // An admin sees every shared one, never a private one.
    expect(await names('root')).toEqual(['Failed role changes']);
    const list = await call('dave', 'GET', '/api/saved-searches');
    expect(list.body.data[0]).toMatchObject({ owner: 'alice@contoso.com', mine: false, can_change: false });
    expect(list.body.share_roles.sort()).toEqual(['admin', 'auditor', 'helpdesk']);
    // The trail records who saved what.
    const actions = t.db
      .prepare("SELECT action, username FROM audit_trail WHERE action LIKE '%saved-search' ORDER BY id")
      .all();
    expect(actions).toEqual([
      { action: 'create-saved-search', username: 'alice@contoso.com' },
      { action: 'create-saved-search', username: 'alice@contoso.com' },
    ]);
  });

  it('run as GET /api/events answers, a relative range counted back from now', async () => {
    const run = await call('alice', 'GET', `/api/saved-searches/${privateId}/events`);
    expect(run.status).toBe(200);
    // Eve's Exchange events of the last hour: the one of 30 minutes ago, not the one of two hours ago.
    expect(run.body.data.map((e: { timestamp: string }) => e.timestamp)).toEqual([
      new Date(Math.floor((NOW - 30 * M) / 1000) * 1000).toISOString(),
    ]);
    const direct = await call(
      'alice',
      'GET',
      `/api/events?actor=eve&services=Exchange&start=${new Date(NOW - 60 * M).toISOString()}`,
    );
    expect(run.body).toEqual(direct.body);
    // The cursor pages as the search's does.
    const first = await call('dave', 'GET', `/api/saved-searches/${sharedId}/events?limit=1`);
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(1);
    expect(first.body.data[0]).toMatchObject({ operation: 'Add member to role', result: 'failure' });
    expect(first.body.next_cursor).toBeNull();
    expect(await t.registry.metrics()).toMatch(/^meshhub_audit_saved_search_runs_total 2$/m);
  });

  it('run with the privacy rules of whoever runs them', async () => {
    const shared = await call('alice', 'POST', '/api/saved-searches', {
      name: 'Everything eve did',
      shared_with: 'helpdesk',
      filters: { actor: 'eve' },
    });
    expect(shared.status).toBe(201);
    const operations = async (who: string) =>
      (await call(who, 'GET', `/api/saved-searches/${shared.body.id}/events`)).body.data.map(
        (e: { operation: string }) => e.operation,
      );
    expect(await operations('alice')).toEqual([
      'Add member to role',
      'MailItemsAccessed',
      'MailItemsAccessed',
    ]);
    expect(await operations('dave')).toEqual(['Add member to role']);
    expect((await call('alice', 'DELETE', `/api/saved-searches/${shared.body.id}`)).status).toBe(204);
  });

  it('of someone else, private, are a 404 on every route, as a missing one is', async () => {
    const before = table();
    for (const who of ['bob', 'dave', 'root']) {
      for (const [method, path, body] of [
        ['GET', `/api/saved-searches/${privateId}`],
        ['GET', `/api/saved-searches/${privateId}/events`],
        ['PUT', `/api/saved-searches/${privateId}`, { name: 'mine now', filters: {} }],
        ['DELETE', `/api/saved-searches/${privateId}`],
        ['GET', '/api/saved-searches/999'],
      ] as Array<[string, string, unknown?]>) {
        const res = await call(who, method, path, body);
        expect(res.status, `${who} ${method} ${path}`).toBe(404);
        expect(res.type).toBe('application/problem+json');
        expect(res.body.detail).toMatch(/^no saved search with id \d+$/);
      }
    }
    expect((await call('bob', 'GET', `/api/saved-searches/${sharedId}`)).status).toBe(404);
    expect(table()).toEqual(before);
  });

  it('shared: the role reads but may not change it; its owner and an audit admin may', async () => {
    expect((await call('dave', 'GET', `/api/saved-searches/${sharedId}`)).status).toBe(200);
    const refused = await call('dave', 'PUT', `/api/saved-searches/${sharedId}`, { name: 'x', filters: {} });
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toMatch(/only its owner, or an audit administrator/);
    expect((await call('dave', 'DELETE', `/api/saved-searches/${sharedId}`)).status).toBe(403);
    const byAdmin = await call('root', 'PUT', `/api/saved-searches/${sharedId}`, {
      name: 'Failed role changes',
      shared_with: 'helpdesk',
      filters: { services: ['Entra ID'], result: 'failure', operation: 'role' },
    });
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body).toMatchObject({ owner: 'alice@contoso.com', mine: false, can_change: true });
    expect((await call('alice', 'GET', `/api/saved-searches/${sharedId}`)).body.filters).toMatchObject({
      operation: 'role',
    });
  });

  it('refuse bad input on every route with a 4xx problem naming the field, and change nothing', async () => {
    const before = table();
    const trail = () => t.db.prepare('SELECT count(*) FROM audit_trail WHERE status < 400').pluck().get();
    const trailBefore = trail();
    const bad: Array<[string, string, unknown, number, string]> = [
      ['POST', '/api/saved-searches', { name: 'x', filters: {}, colour: 'red' }, 400, 'colour'],
      ['POST', '/api/saved-searches', { name: 'x', filters: { actr: 'eve' } }, 400, 'filters.actr'],
      ['POST', '/api/saved-searches', { name: 'x', filters: { start: 'yesterday' } }, 400, 'filters.start'],
      ['POST', '/api/saved-searches', { name: 'x', filters: { last: 'a while' } }, 400, 'filters.last'],
      [
        'POST',
        '/api/saved-searches',
        { name: 'x', filters: { last: '1h', start: '2025-05-01T00:00:00Z' } },
        400,
        'filters.last',
      ],
      [
        'POST',
        '/api/saved-searches',
        { name: 'x', filters: { start: '2025-05-02T00:00:00Z', end: '2025-05-01T00:00:00Z' } },
        400,
        'filters.end',
      ],
      ['POST', '/api/saved-searches', { name: 'x'.repeat(121), filters: {} }, 400, 'name'],
      ['POST', '/api/saved-searches', { name: '', filters: {} }, 400, 'name'],
      ['POST', '/api/saved-searches', { name: 'x' }, 400, 'filters'],
      [
        'POST',
        '/api/saved-searches',
        { name: 'x', shared_with: 'subscriber', filters: {} },
        400,
        'shared_with',
      ],
      ['POST', '/api/saved-searches', { name: 'eve’s MAIL, last hour', filters: {} }, 409, 'name'],
      ['PUT', `/api/saved-searches/${sharedId}`, { name: 'Eve’s mail, last hour', filters: {} }, 409, 'name'],
      [
        'PUT',
        `/api/saved-searches/${sharedId}`,
        { name: 'y', filters: { result: 7 } },
        400,
        'filters.result',
      ],
      ['PUT', '/api/saved-searches/abc', { name: 'y', filters: {} }, 400, 'id'],
      ['GET', '/api/saved-searches/abc', undefined, 400, 'id'],
      ['GET', '/api/saved-searches/0', undefined, 400, 'id'],
      ['DELETE', '/api/saved-searches/1e3', undefined, 400, 'id'],
      ['GET', '/api/saved-searches/abc/events', undefined, 400, 'id'],
      ['GET', `/api/saved-searches/${privateId}/events?limit=0`, undefined, 400, 'limit'],
      ['GET', `/api/saved-searches/${privateId}/events?cursor=nope`, undefined, 400, 'cursor'],
    ];
    for (const [method, path, body, status, field] of bad) {
      const res = await call('alice', method, path, body);
      expect(res.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(status);
      expect(res.type).toBe('application/problem+json');
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
    const notJson = await fetch(
      `${base}/api/saved-searches`,
      withBearer(tokens.alice!, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' }),
    );
    expect(notJson.status).toBe(415);
    const broken = await fetch(
      `${base}/api/saved-searches`,
      withBearer(tokens.alice!, jsonInit('POST', '{"name":')),
    );
    expect(broken.status).toBe(400);
    expect(table()).toEqual(before);
    expect(trail()).toBe(trailBefore);
  });

  it('are alert rule conditions only for who may see them, and cannot be deleted under a rule', async () => {
    const rule = (saved: string) => ({ name: `On ${saved}`, condition: { saved_search: Number(saved) } });
    // root may not see alice's private search: as if it did not exist.
    const hidden = await call('root', 'POST', '/api/rules', rule(privateId));
    expect(hidden.status).toBe(400);
    expect(hidden.body.errors).toEqual([
      { field: 'condition.saved_search', message: `no saved search with id ${privateId} that you can see` },
    ]);
    const wrongType = await call('root', 'POST', '/api/rules', {
      name: 'x',
      condition: { saved_search: 'one' },
    });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.errors[0].field).toBe('condition.saved_search');
    const created = await call('root', 'POST', '/api/rules', rule(sharedId));
    expect(created.status).toBe(201);
    expect(created.body.condition).toEqual({ saved_search: Number(sharedId) });

    const inUse = await call('alice', 'DELETE', `/api/saved-searches/${sharedId}`);
    expect(inUse.status).toBe(409);
    expect(inUse.body.detail).toBe(
      `saved search ${sharedId} is the condition of alert rule ${created.body.id} "On ${sharedId}": change or delete the rule first`,
    );
    expect((await call('alice', 'GET', `/api/saved-searches/${sharedId}`)).status).toBe(200);
    expect((await call('root', 'DELETE', `/api/rules/${created.body.id}`)).status).toBe(204);
    expect((await call('alice', 'DELETE', `/api/saved-searches/${sharedId}`)).status).toBe(204);
    expect((await call('alice', 'GET', `/api/saved-searches/${sharedId}`)).status).toBe(404);
    expect((await call('alice', 'DELETE', `/api/saved-searches/${privateId}`)).status).toBe(204);
    expect(table()).toEqual([]);
  });
});
