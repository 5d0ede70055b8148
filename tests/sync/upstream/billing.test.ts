/**
 * Issue 12, billing on the upstream: "billing there is reachable by BTCPay's webhooks (a site
 * behind NAT is not), and the subscriptions it activates flow down to the sites that carry the
 * nodes". Everything real on loopback: two upstream processes (two createUpstream servers, one
 * PostgreSQL schema), the loopback BTCPay fake speaking Greenfield's shapes, and a whole hub
 * (simulator radio) syncing with upstream A.
 *
 * - a subscriber buys a plan on the upstream, BTCPay's webhook settles it, the subscription is
 *   active upstream, its `subscription` command is applied at the site, and the subscriber's
 *   text (refused before) is delivered by the site's radio;
 * - the same webhook delivered to both upstream processes at once applies once;
 * - a renewal extends the period and updates the site's row, never adds one;
 * - a bad or missing signature: 401 problem, nothing changed;
 * - a missed webhook settles through the poll job; periods move along with the expiry job, also
 *   when both processes run it at once.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHub, type Hub } from '../../../hub/main.js';
import { loadConfig } from '../../../hub/settings.js';
import { LocalIssuer } from '../../../src/auth/local-issuer.js';
import { messagingRoles } from '../../../src/mesh/simulator/messaging-responder.js';
import { createSimNetwork } from '../../../src/mesh/simulator/nodes.js';
import { SubscriptionRepository } from '../../../src/messaging/subscription-repository.js';
import { UpstreamUserService } from '../../../sync/upstream/auth/user-service.js';
import { createUpstream, type UpstreamServer } from '../../../sync/upstream/main.js';
import { loadUpstreamSettings } from '../../../sync/upstream/settings.js';
import { SiteRegistry } from '../../../sync/upstream/sites.js';
import type { FakeBtcpay } from '../../fakes/btcpay/fake-btcpay.js';
import { waitFor } from '../../helpers/hub.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';
import { call, FAST_MESSAGING, type Json, PASSWORD, tokenFor } from '../../messaging/helpers.js';
import { API_KEY, fakeBtcpay, STORE_ID, WEBHOOK_SECRET } from '../../plugins/billing/helpers.js';

const skip = await skipWithoutPostgres();
const silent = pino({ level: 'silent' });
const DAY = 86_400_000;
const GRACE_MS = 24 * 3_600_000;
const SEED = 11;
const NODES = 5;
const CENTER = { latitude: 47.3769, longitude: 8.5417 };

/**
 * In front of the fake BTCPay: when `holdFetches(n)` is set, invoice GETs are held until `n` of
 * them wait, then all go on together, so two upstream processes reach their transaction at once.
 */
class Gate {
  private server: Server | undefined;
  private held: Array<() => void> = [];
  private want = 0;

  constructor(private readonly target: () => string) {}

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  holdFetches(n: number): void {
    this.want = n;
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch(() => res.destroy());
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method === 'GET' && this.want > 0) {
      await new Promise<void>((release) => {
        this.held.push(release);
        if (this.held.length >= this.want) {
          this.want = 0;
          for (const go of this.held.splice(0)) go();
        }
      });
    }
    const upstream = await fetch(`${this.target()}${req.url}`, {
      method: req.method ?? 'GET',
      headers: {
        authorization: req.headers.authorization ?? '',
        'content-type': req.headers['content-type'] ?? 'application/json',
      },
      ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
    });
    res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(await upstream.text());
  }
}

let schema: TestSchema;
let fake: FakeBtcpay;
let gate: Gate;
let a: UpstreamServer;
let b: UpstreamServer;
let site: Hub | undefined;
let admin: string;
const scratch = mkdtempSync(join(tmpdir(), 'meshhub-upstream-billing-'));
const urlOf = (u: UpstreamServer) => `http://127.0.0.1:${u.port}`;
const webhookOf = (u: UpstreamServer) => `${urlOf(u)}/api/v1/billing/webhooks/btcpay`;
const replier = messagingRoles(createSimNetwork({ seed: SEED, nodeCount: NODES, center: CENTER }))
  .repliers[0]!;

async function upstreamServer(): Promise<UpstreamServer> {
  const server = await createUpstream(
    loadUpstreamSettings({
      UPSTREAM_DATABASE_URL: schema.url,
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: '0',
      // Processes behind one load balancer share the token key (settings.ts).
      DATA_DIR: join(scratch, 'upstream'),
      LOG_LEVEL: 'silent',
      MESSAGE_RATE_PER_SUBSCRIBER: '1000/1m',
      MESSAGE_RATE_PER_NODE: '1000/1m',
      PLUGINS: 'billing',
      BTCPAY_URL: gate.url,
      BTCPAY_STORE_ID: STORE_ID,
      BTCPAY_API_KEY: API_KEY,
      BTCPAY_WEBHOOK_SECRET: WEBHOOK_SECRET,
      BTCPAY_ALLOW_PRIVATE_NETWORK: 'true',
      BTCPAY_TIMEOUT_MS: '2000',
      // The jobs run when a test says (runJob), never on their own in the middle of one.
      BILLING_POLL_CRON: '0 0 1 1 *',
      BILLING_EXPIRY_CRON: '0 0 1 1 *',
    }),
    { log: silent, defaultMetrics: false },
  );
  await server.start();
  return server;
}

async function q<T = Json>(sql: string, ...params: unknown[]): Promise<T[]> {
  return (await a.pool.query(sql, params)).rows as T[];
}

async function subscriber(name: string): Promise<string> {
  await new UpstreamUserService(a.pool).add({ username: name, password: PASSWORD, roles: ['subscriber'] });
  return tokenFor(urlOf(a), name);
}

/** Buys the monthly plan on `on`: the 201 body. */
async function buy(token: string, on: UpstreamServer = a): Promise<Json> {
  const res = await call(urlOf(on), 'POST', '/api/v1/billing/subscriptions', {
    token,
    body: { plan_id: 'monthly' },
  });
  expect(res.status).toBe(201);
  expect(res.body).toMatchObject({ status: 'pending_payment', current_period_end: null });
  return res.body;
}

async function mine(token: string): Promise<Json> {
  const res = await call(urlOf(b), 'GET', '/api/v1/billing/subscriptions', { token });
  expect(res.status).toBe(200);
  return res.body.data[0];
}

/** The upstream subscription (grant) billing made for a billing subscription. */
const grantsOf = (billingId: string) =>
  q<{ id: number; subscriber: string; status: string; expires_at: number; all_nodes: boolean }>(
    "SELECT id, subscriber, status, expires_at, all_nodes FROM subscriptions WHERE source = 'billing' AND reference = $1",
    billingId,
  );

/** The `subscription` commands queued for the grant: [site, expires_at, acked result]. */
const commandsOf = (grantId: number) =>
  q<{ site_id: string; expires_at: string; result: string | null }>(
    `SELECT site_id, body->>'expires_at' AS expires_at, result FROM downlink
     WHERE kind = 'subscription' AND body->>'upstream_id' = $1 ORDER BY id`,
    String(grantId),
  );

const changesOf = (billingId: string) =>
  q<{ from_status: string | null; to_status: string; cause: string }>(
    'SELECT from_status, to_status, cause FROM billing_changes WHERE subscription_id = $1 ORDER BY seq',
    billingId,
  );

/** The site's own rows for the upstream subscription (source `upstream`, reference = its id). */
function atSite(grantId: number) {
  return new SubscriptionRepository(site!.store.db)
    .list()
    .filter((s) => s.source === 'upstream' && s.reference === String(grantId));
}

beforeAll(async () => {
  if (skip) return;
  schema = await createTestSchema('upbilling');
  fake = fakeBtcpay();
  await fake.start();
  gate = new Gate(() => fake.url);
  await gate.start();
  mkdirSync(join(scratch, 'upstream'), { recursive: true });
  a = await upstreamServer();
  b = await upstreamServer();
  fake.webhookUrl = webhookOf(a);

  const siteDir = join(scratch, 'north');
  const issuer = await LocalIssuer.open(siteDir);
  await new SiteRegistry(a.pool).add({ siteId: 'north', name: 'north', publicJwks: issuer.jwks() });
  const env = {
    ...FAST_MESSAGING,
    DATA_DIR: siteDir,
    HTTP_HOST: '127.0.0.1',
    HTTP_PORT: '0',
    MESH_API_PORT: '0',
    RADIO: 'sim',
    SIM_PORT: '0',
    SIM_SEED: String(SEED),
    SIM_NODES: String(NODES),
    MQTT_PORT: '0',
    LOG_LEVEL: 'silent',
    SYNC_UPSTREAM_URL: urlOf(a),
    SYNC_SITE_ID: 'north',
  };
  site = await createHub(loadConfig(env), { log: silent, defaultMetrics: false, env });
  await site.start();

  await new UpstreamUserService(a.pool).add({ username: 'root', password: PASSWORD, roles: ['admin'] });
  admin = await tokenFor(urlOf(a), 'root');
  const plan = await call(urlOf(a), 'POST', '/api/v1/billing/plans', {
    token: admin,
    body: { id: 'monthly', name: 'Monthly', price: '5', currency: 'USD', period_days: 30, nodes: 'all' },
  });
  expect(plan.status).toBe(201);
}, 120_000);

afterAll(async () => {
  await site?.stop();
  await a?.stop();
  await b?.stop();
  await gate?.stop();
  await fake?.stop();
  await schema?.drop();
  rmSync(scratch, { recursive: true, force: true });
});

describe.skipIf(skip)('billing on the upstream', () => {
  let alice: string;
  let aliceSub: Json;
  let grantId: number;

  it('activates a paid plan upstream and sends it down to the site that carries the nodes', async () => {
    alice = await subscriber('alice');
    // The site has told the upstream about the node (its radio hears it).
    await waitFor(
      async () => (await q("SELECT 1 FROM nodes WHERE site_id = 'north' AND node_id = $1", replier.id))[0],
      30_000,
      `${replier.id} heard by north upstream`,
    );
    const before = await call(urlOf(a), 'POST', '/api/v1/messages', {
      token: alice,
      body: { target_node_id: replier.id, text: 'before paying' },
    });
    expect(before.status).toBe(403);

    aliceSub = await buy(alice);
    expect(aliceSub.checkout_link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/i\//);
    const paid = await fake.pay(aliceSub.invoice_id);
    expect(paid).toMatchObject({ status: 200, body: { result: 'applied' } });

    const active = await mine(alice);
    expect(active).toMatchObject({ id: aliceSub.id, status: 'active', invoice_status: 'settled' });
    const end = Date.parse(active.current_period_end);
    const grants = await grantsOf(aliceSub.id);
    expect(grants).toEqual([
      {
        id: grants[0]!.id,
        subscriber: 'alice',
        status: 'active',
        expires_at: end + GRACE_MS,
        all_nodes: true,
      },
    ]);
    grantId = grants[0]!.id;

    // The site applied the command: its own row lets the upstream subscriber text the node.
    await waitFor(
      async () => (await commandsOf(grantId)).every((c) => c.result === 'applied') || undefined,
      20_000,
      'the subscription command acknowledged by north',
    );
    expect(await commandsOf(grantId)).toEqual([
      { site_id: 'north', expires_at: String(end + GRACE_MS), result: 'applied' },
    ]);
    const rows = atSite(grantId);
    expect(rows).toMatchObject([
      { subscriber: 'upstream:alice', status: 'active', expiresAt: end + GRACE_MS },
    ]);
    const grants2 = new SubscriptionRepository(site!.store.db);
    expect(grants2.allows('upstream:alice', replier.id, Date.now())).toBe(true);

    const sent = await call(urlOf(a), 'POST', '/api/v1/messages', {
      token: alice,
      body: { target_node_id: replier.id, text: 'paid and texting' },
    });
    expect(sent.status).toBe(202);
    const delivered = await waitFor(
      async () => {
        const r = await call(urlOf(a), 'GET', `/api/v1/messages/${sent.body.id}`, { token: alice });
        return r.body.status === 'delivered' ? r.body : undefined;
      },
      30_000,
      'the text delivered at north',
    );
    expect(delivered.history.map((h: Json) => h.status)).toEqual(['queued', 'sent', 'delivered']);
  });

  it('applies the same webhook once when both upstream processes get it at once', async () => {
    const bob = await subscriber('bob');
    const sub = await buy(bob, b);
    fake.setStatus(sub.invoice_id, 'Settled');
    const body = JSON.stringify(fake.payload(sub.invoice_id, 'InvoiceSettled'));
    gate.holdFetches(2);
    const [ra, rb] = await Promise.all(
      [a, b].map((u) => {
        fake.webhookUrl = webhookOf(u);
        return fake.post(body);
      }),
    );
    fake.webhookUrl = webhookOf(a);
    expect([ra!.status, rb!.status]).toEqual([200, 200]);
    const results = [(ra!.body as Json).result, (rb!.body as Json).result].sort();
    expect(results[0]).toBe('applied');
    expect(['duplicate', 'unchanged']).toContain(results[1]);

    expect((await changesOf(sub.id)).map((c) => c.to_status)).toEqual(['pending_payment', 'active']);
    const grants = await grantsOf(sub.id);
    expect(grants).toHaveLength(1);
    expect((await commandsOf(grants[0]!.id)).map((c) => c.site_id)).toEqual(['north']);
    expect(
      await q('SELECT delivery_id FROM billing_deliveries WHERE invoice_id = $1', sub.invoice_id),
    ).toHaveLength(1);
  });

  it('extends the period on a renewal and updates the site’s subscription instead of adding one', async () => {
    const before = await mine(alice);
    const end = Date.parse(before.current_period_end);
    const renewal = await call(urlOf(b), 'POST', `/api/v1/billing/subscriptions/${aliceSub.id}/renew`, {
      token: alice,
    });
    expect(renewal.status).toBe(201);
    expect(renewal.body.invoice_id).not.toBe(aliceSub.invoice_id);
    expect(await fake.pay(renewal.body.invoice_id)).toMatchObject({
      status: 200,
      body: { result: 'applied' },
    });

    const after = await mine(alice);
    // Paid before the end: the new period runs from the old end, not from now.
    expect(Date.parse(after.current_period_end)).toBe(end + 30 * DAY);
    const until = end + 30 * DAY + GRACE_MS;
    expect(await grantsOf(aliceSub.id)).toMatchObject([{ id: grantId, status: 'active', expires_at: until }]);
    await waitFor(
      async () => (await commandsOf(grantId)).every((c) => c.result === 'applied') || undefined,
      20_000,
      'the renewal command acknowledged by north',
    );
    expect((await commandsOf(grantId)).map((c) => [c.site_id, Number(c.expires_at)])).toEqual([
      ['north', end + GRACE_MS],
      ['north', until],
    ]);
    expect(atSite(grantId)).toMatchObject([
      { subscriber: 'upstream:alice', status: 'active', expiresAt: until },
    ]);
  });

  it('refuses a webhook with a bad or missing signature and changes nothing', async () => {
    const carol = await subscriber('carol');
    const sub = await buy(carol);
    fake.setStatus(sub.invoice_id, 'Settled');
    const body = JSON.stringify(fake.payload(sub.invoice_id, 'InvoiceSettled'));
    fake.webhookUrl = webhookOf(b);
    const forged = [{ secret: 'another-secret-entirely' }, { signature: null }, { signature: 'sha256=00' }];
    for (const options of forged) {
      const res = await fake.post(body, options);
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ status: 401, title: expect.any(String) });
    }
    fake.webhookUrl = webhookOf(a);
    expect(await mine(carol)).toMatchObject({ status: 'pending_payment', invoice_status: 'new' });
    expect((await changesOf(sub.id)).map((c) => c.to_status)).toEqual(['pending_payment']);
    expect(await q('SELECT 1 FROM billing_deliveries WHERE invoice_id = $1', sub.invoice_id)).toEqual([]);
    expect(await grantsOf(sub.id)).toEqual([]);
    // The right signature on the same body still works: nothing was spent by the refusals.
    expect(await fake.post(body)).toMatchObject({ status: 200, body: { result: 'applied' } });
  });

  it('settles a missed webhook through the poll job', async () => {
    const dave = await subscriber('dave');
    const sub = await buy(dave);
    fake.setStatus(sub.invoice_id, 'Settled');
    expect(await b.billing!.runJob('poll')).toBe(true);
    expect(await mine(dave)).toMatchObject({ status: 'active', invoice_status: 'settled' });
    expect(await grantsOf(sub.id)).toHaveLength(1);
  });

  it('moves ended periods along once, also when both processes run the expiry job at once', async () => {
    const erin = await subscriber('erin');
    const sub = await buy(erin);
    await fake.pay(sub.invoice_id);
    const [grant] = await grantsOf(sub.id);
    const ended = Date.now() - 60_000;
    // Time travel without sleeping: the period (and its grant) ended a minute ago.
    await q('UPDATE billing_subscriptions SET current_period_end = $2 WHERE id = $1', sub.id, ended);
    await q('UPDATE subscriptions SET expires_at = $2 WHERE id = $1', grant!.id, ended + GRACE_MS);
    await Promise.all([a.billing!.runJob('expiry'), b.billing!.runJob('expiry')]);
    expect(await mine(erin)).toMatchObject({ status: 'past_due' });
    // Past due still messages (grace).
    const grace = await call(urlOf(a), 'POST', '/api/v1/messages', {
      token: erin,
      body: { target_node_id: replier.id, text: 'in grace' },
    });
    expect(grace.status).toBe(202);

    const lapsed = Date.now() - GRACE_MS - 60_000;
    await q('UPDATE billing_subscriptions SET current_period_end = $2 WHERE id = $1', sub.id, lapsed);
    await q('UPDATE subscriptions SET expires_at = $2 WHERE id = $1', grant!.id, lapsed + GRACE_MS);
    await Promise.all([a.billing!.runJob('expiry'), b.billing!.runJob('expiry')]);
    expect(await mine(erin)).toMatchObject({ status: 'expired' });
    expect((await changesOf(sub.id)).map((c) => `${c.from_status}>${c.to_status}`)).toEqual([
      'null>pending_payment',
      'pending_payment>pending_payment', // payment seen, waiting for confirmation
      'pending_payment>active',
      'active>past_due',
      'past_due>expired',
    ]);
    const refused = await call(urlOf(a), 'POST', '/api/v1/messages', {
      token: erin,
      body: { target_node_id: replier.id, text: 'after the end' },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toMatch(/lapsed|ended|expired/i);
  });
});
