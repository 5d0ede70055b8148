/**
 * Issue 14, defects 5 and 6, against the loopback Microsoft fake: the private-address check on
 * every Microsoft request; a valid Graph notification that cannot lead to a fetch says why;
 * and with WEBHOOK_PUBLIC_URL the hub creates the directoryAudits subscription (Graph validating
 * the notification URL over a real socket first) and renews it before it expires.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type GraphSubscriptionActor,
  SUBSCRIPTION_LIFETIME_MS,
} from '../../../plugins/audit/microsoft/graph-subscription-actor.js';
import { FakeMicrosoft } from '../../fakes/microsoft/fake-microsoft.js';
import { directoryAudit } from '../../fakes/microsoft/fixtures.js';
import { type AuditTestApp, auditApp, jsonInit } from './helpers.js';

const SECRET = 'a-client-state-of-some-length';
const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

async function fake(): Promise<FakeMicrosoft> {
  const f = new FakeMicrosoft();
  await f.start();
  cleanup.push(() => f.stop());
  return f;
}
async function app(env: Record<string, string>): Promise<AuditTestApp> {
  const t = await auditApp(env);
  cleanup.push(() => t.close());
  return t;
}

/** The Microsoft fake and an app collecting only the directory from it, `env` added. */
async function directoryApp(env: Record<string, string>): Promise<{ f: FakeMicrosoft; t: AuditTestApp }> {
  const f = await fake();
  const t = await app({ ...f.env(), AUDIT_SOURCES: 'directory', ...env });
  return { f, t };
}

describe('the private-address check on the Microsoft endpoints', () => {
  it('refuses a Graph base URL on a private address before anything is sent', async () => {
    const { f, t } = await directoryApp({ AUDIT_GRAPH_BASE_URL: 'https://10.20.30.40' });
    expect((await t.json('/api/fetch', { method: 'POST' })).status).toBe(202);
    await t.collector.idle();
    const health = (await t.json('/api/source-health')).body.data[0];
    expect(health.status).toBe('error');
    expect(health.error).toMatch(/refused to call 10\.20\.30\.40: .*non-public address/);
    // The token request went to the (loopback) login fake; nothing else left the hub.
    expect(f.requestsTo('graph')).toHaveLength(0);
  });

  it('refuses a login URL on a link-local address: the client secret never goes there', async () => {
    const { t } = await directoryApp({ AUDIT_LOGIN_BASE_URL: 'https://169.254.169.254' });
    await t.request('/api/fetch', { method: 'POST' });
    await t.collector.idle();
    expect((await t.json('/api/source-health')).body.data[0].error).toMatch(
      /refused to call 169\.254\.169\.254/,
    );
  });

  it('lets AUDIT_ALLOW_PRIVATE_NETWORK=true opt in (the request is then attempted)', async () => {
    const { t } = await directoryApp({
      AUDIT_GRAPH_BASE_URL: 'https://10.20.30.40',
      AUDIT_ALLOW_PRIVATE_NETWORK: 'true',
      AUDIT_REQUEST_TIMEOUT_MS: '100',
      AUDIT_MAX_RETRIES: '0',
    });
    await t.request('/api/fetch', { method: 'POST' });
    await t.collector.idle();
    expect((await t.json('/api/source-health')).body.data[0].error).toMatch(/no answer from 10\.20\.30\.40/);
  });
});

describe('a valid Graph notification that cannot lead to a fetch', () => {
  const notification = { value: [{ subscriptionId: 's', changeType: 'created', clientState: SECRET }] };

  it('says collection is not configured (409), not 202', async () => {
    const t = await app({ WEBHOOK_CLIENT_SECRET: SECRET });
    const res = await t.json('/api/webhooks/directory', jsonInit('POST', notification));
    expect(res.status).toBe(409);
    expect(res.body.detail).toMatch(/collection is not configured/);
  });

  it('says the directory is not collected (409)', async () => {
    const f = await fake();
    const t = await app({ ...f.env(), AUDIT_SOURCES: 'exchange', WEBHOOK_CLIENT_SECRET: SECRET });
    const res = await t.json('/api/webhooks/directory', jsonInit('POST', notification));
    expect(res.status).toBe(409);
    expect(res.body.detail).toMatch(/directory source is not collected/);
  });
});

describe('the directoryAudits subscription, with WEBHOOK_PUBLIC_URL', () => {
  /** The hub's routes on a real socket, so the fake can validate the notification URL. */
  async function withPublicUrl(f: FakeMicrosoft, env: Record<string, string> = {}) {
    let target: AuditTestApp | undefined;
    const server: Server = createServer((req, res) => {
      if (!target) return void res.writeHead(503).end();
      return getRequestListener(target.app.fetch)(req, res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanup.push(
      () =>
        new Promise<void>((r) => {
          server.closeAllConnections();
          server.close(() => r());
        }),
    );
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const t = await app({
      ...f.env(),
      AUDIT_SOURCES: 'directory',
      WEBHOOK_CLIENT_SECRET: SECRET,
      WEBHOOK_PUBLIC_URL: base,
      ...env,
    });
    target = t;
    const actor = t.actors.find((a) => a.name === 'audit-graph-subscription') as GraphSubscriptionActor;
    return { t, actor, base };
  }

  it('creates it on start, validated over the socket, and a notification then fetches early', async () => {
    const f = await fake();
    f.directoryAudits.push(directoryAudit(1, Date.now() - 60_000));
    const { t, actor, base } = await withPublicUrl(f);
    await actor.renewIfDue();
    const subs = [...f.subscriptionsById.values()];
    expect(subs).toHaveLength(1);
    expect(subs[0]).toMatchObject({
      resource: 'auditLogs/directoryAudits',
      changeType: 'created',
      clientState: SECRET,
      notificationUrl: `${base}/api/webhooks/directory`,
    });
    const lifetime = Date.parse(subs[0]!.expirationDateTime) - Date.now();
    expect(lifetime).toBeGreaterThan(SUBSCRIPTION_LIFETIME_MS - 60_000);
    expect(lifetime).toBeLessThanOrEqual(4230 * 60_000);
    expect(actor.current()?.id).toBe(subs[0]!.id);
    // A restart (a second check) keeps the same subscription instead of creating another.
    await actor.renewIfDue();
    expect(f.subscriptionsById.size).toBe(1);
    expect(f.requestsTo('graph', '/v1.0/subscriptions').filter((r) => r.method === 'PATCH')).toHaveLength(0);

    const ok = await t.request(
      '/api/webhooks/directory',
      jsonInit('POST', {
        value: [{ subscriptionId: subs[0]!.id, changeType: 'created', clientState: SECRET }],
      }),
    );
    expect(ok.status).toBe(202);
    await t.collector.idle();
    expect(t.db.prepare('SELECT count(*) FROM audit_events').pluck().get()).toBe(1);
  });

  it('renews it by PATCH once less than half its life is left, and recreates one Graph lost', async () => {
    const f = await fake();
    const { t, actor } = await withPublicUrl(f);
    await actor.renewIfDue();
    const first = actor.current()!;
    // More than half its life left: nothing to do.
    await actor.renewIfDue();
    const patchesOf = (id: string) =>
      f.requestsTo('graph', `/v1.0/subscriptions/${id}`).filter((r) => r.method === 'PATCH');
    expect(patchesOf(first.id)).toHaveLength(0);
    // Most of its life gone (Graph's clock cannot be moved, so the subscription is made older).
    const soon = Date.now() + 10 * 3_600_000;
    f.subscriptionsById.get(first.id)!.expirationDateTime = new Date(soon).toISOString();
    t.repos.state.set('graph.subscription.directory', { ...first, expiresAt: soon });
    await actor.renewIfDue();
    expect(patchesOf(first.id)).toHaveLength(1);
    expect(actor.current()!.id).toBe(first.id);
    expect(actor.current()!.expiresAt).toBeGreaterThan(soon + SUBSCRIPTION_LIFETIME_MS / 2);
    expect(Date.parse(f.subscriptionsById.get(first.id)!.expirationDateTime)).toBe(
      actor.current()!.expiresAt,
    );

    f.subscriptionsById.clear();
    t.repos.state.set('graph.subscription.directory', { ...actor.current()!, expiresAt: soon });
    await actor.renewIfDue();
    expect(f.subscriptionsById.size).toBe(1);
    expect(actor.current()!.id).not.toBe(first.id);
  });

  it('keeps no subscription without WEBHOOK_PUBLIC_URL', async () => {
    const f = await fake();
    const t = await app({ ...f.env(), AUDIT_SOURCES: 'directory', WEBHOOK_CLIENT_SECRET: SECRET });
    const actor = t.actors.find((a) => a.name === 'audit-graph-subscription') as GraphSubscriptionActor;
    await actor.renewIfDue();
    expect(f.requestsTo('graph', '/v1.0/subscriptions')).toHaveLength(0);
  });

  it('refuses WEBHOOK_PUBLIC_URL without the client state, or over plain http to another host', async () => {
    await expect(auditApp({ WEBHOOK_PUBLIC_URL: 'https://hub.example.org' })).rejects.toThrow(
      /WEBHOOK_CLIENT_SECRET/,
    );
    await expect(
      auditApp({ WEBHOOK_PUBLIC_URL: 'http://hub.example.org', WEBHOOK_CLIENT_SECRET: SECRET }),
    ).rejects.toThrow(/WEBHOOK_PUBLIC_URL/);
  });
});
