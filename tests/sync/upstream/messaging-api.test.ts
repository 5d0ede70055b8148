/**
 * The upstream's messaging API (sync/upstream/messaging) on a real PostgreSQL: a text goes to the
 * site that heard the node most recently, as a stored message plus a `text` command for that
 * site; the hub's 400/401/403/404/422/429 rules, each refusal storing nothing; rate limits shared
 * by two upstream "processes" (two apps on two pools); one conversation per node across sites,
 * read marks private to their subscriber; and a site's refusal failing the message.
 *
 * Tokens are real: the upstream identity's own issuer signs them, its verifier checks them.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { Hono } from 'hono';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HubIdentity, openHubIdentity } from '../../../src/auth/hub-identity.js';
import { createErrorHandler, notFound } from '../../../src/http/error-handler.js';
import { RateLimiter } from '../../../src/kernel/rate-limit.js';
import { messageDetailSchema, messageRecordSchema } from '../../../src/messaging/schemas.js';
import { migrateUpstream } from '../../../sync/upstream/db/migrate.js';
import { openPool, withTransaction } from '../../../sync/upstream/db/pool.js';
import { takeRateTokens } from '../../../sync/upstream/messaging/rate-limits.js';
import {
  messagingOnAck,
  type RateSetting,
  upstreamMessagingRoutes,
} from '../../../sync/upstream/messaging/routes.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';
import { type ApiResponse, call as callApi, type Json } from '../../messaging/helpers.js';

type CallOptions = Parameters<typeof callApi>[3];

const GENEROUS: RateSetting = { count: 1000, windowMs: 60_000 };
const SITE_A = 'site-a';
const SITE_B = 'site-b';
const T0 = Date.UTC(2030, 0, 1);

const skip = await skipWithoutPostgres();

describe.skipIf(skip)('upstream messaging API', () => {
  let schema: TestSchema;
  let poolA: pg.Pool;
  let poolB: pg.Pool;
  let dataDir: string;
  let identity: HubIdentity;
  /** The clock every app here reads; tests that need a fixed time set it. */
  let clock = () => Date.now();

  beforeAll(async () => {
    schema = await createTestSchema('msg');
    poolA = openPool(schema.url, { max: 8 });
    poolB = openPool(schema.url, { max: 8 });
    await migrateUpstream(poolA);
    dataDir = mkdtempSync(join(tmpdir(), 'meshhub-upstream-msg-'));
    identity = await openHubIdentity({ dataDir });
    const now = Date.now();
    for (const site of [SITE_A, SITE_B]) {
      await poolA.query(
        `INSERT INTO sites (site_id, name, public_jwks, created_at) VALUES ($1, $1, '{"keys":[]}', $2)`,
        [site, now],
      );
    }
  });

  afterAll(async () => {
    await poolA?.end();
    await poolB?.end();
    await schema?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  // --- helpers ---

  function appOn(
    pool: pg.Pool,
    rates: { perSubscriber: RateSetting; perNode: RateSetting } = {
      perSubscriber: GENEROUS,
      perNode: GENEROUS,
    },
  ): Hono {
    const app = new Hono();
    app.onError(createErrorHandler());
    app.notFound(notFound);
    app.route('/api/v1/messages', upstreamMessagingRoutes({ pool, identity, rates, now: () => clock() }));
    return app;
  }

  /** A request to `/api/v1/messages` of `app`. */
  function call(app: Hono, method: string, path: string, options?: CallOptions): Promise<ApiResponse> {
    return callApi(app, method, `/api/v1/messages${path === '/' ? '' : path}`, options);
  }

  /** A user of its own per test (nothing one test leaves behind reaches another), with a real token. */
  async function user(roles: string[] = ['subscriber']): Promise<{ name: string; token: string }> {
    const name = `u-${randomUUID().slice(0, 8)}`;
    const { accessToken } = await identity.localIssuer.issue({ username: name, roles }, 3600);
    return { name, token: accessToken };
  }

  const newNode = () => `!${randomBytes(4).toString('hex')}`;

  /** What a site's batch says about a node: `site` heard it at `lastHeard`. */
  async function heard(
    site: string,
    nodeId: string,
    lastHeard: number | null,
    longName: string | null = null,
  ) {
    await poolA.query(
      `INSERT INTO nodes (site_id, node_id, node_num, long_name, last_heard, updated_at, received_at)
       VALUES ($1, $2, $3, $4, $5, $6, $6)
       ON CONFLICT (site_id, node_id) DO UPDATE SET last_heard = excluded.last_heard, long_name = excluded.long_name`,
      [site, nodeId, Number.parseInt(nodeId.slice(1), 16), longName, lastHeard, Date.now()],
    );
  }

  async function subscribe(
    subscriber: string,
    options: {
      nodes?: 'all' | string[];
      status?: string;
      expiresAt?: number | null;
      source?: string;
      reference?: string;
    } = {},
  ) {
    const nodes = options.nodes ?? 'all';
    await poolA.query(
      `INSERT INTO subscriptions (subscriber, all_nodes, node_ids, status, expires_at, source, reference, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 0, 0)`,
      [
        subscriber,
        nodes === 'all',
        nodes === 'all' ? [] : nodes,
        options.status ?? 'active',
        options.expiresAt ?? null,
        options.source ?? 'cli',
        options.reference ?? null,
      ],
    );
  }

  /** A subscribed user and a node both sites know, site A having heard it last. */
  async function scene(): Promise<{ name: string; token: string; node: string }> {
    const u = await user();
    await subscribe(u.name);
    const node = newNode();
    await heard(SITE_A, node, 2_000);
    await heard(SITE_B, node, 1_000);
    return { ...u, node };
  }

  /** Everything a send could have stored, for "a refused request stores nothing". */
  async function footprint(): Promise<Record<string, number>> {
    const { rows } = await poolA.query<Record<string, number>>(
      `SELECT (SELECT count(*) FROM messages)::int AS messages,
         (SELECT count(*) FROM message_transitions)::int AS transitions,
         (SELECT count(*) FROM downlink)::int AS downlink,
         (SELECT count(*) FROM idempotency_keys)::int AS idempotency_keys,
         (SELECT coalesce(sum(count), 0) FROM rate_windows)::int AS rate_taken`,
    );
    return rows[0]!;
  }

  async function messageRow(id: string): Promise<Json> {
    return (await poolA.query('SELECT * FROM messages WHERE id = $1', [id])).rows[0];
  }

  async function commandsFor(messageId: string): Promise<Json[]> {
    return (
      await poolA.query("SELECT * FROM downlink WHERE body->>'message_id' = $1 ORDER BY id", [messageId])
    ).rows;
  }

  /** A site's record of an inbound text as batch-apply stores it (site origin, routed to `upstream:<p>`). */
  async function reply(site: string, subscriber: string | null, node: string, text: string, at: number) {
    const id = randomUUID();
    await poolA.query(
      `INSERT INTO messages (site_id, id, origin, subscriber, owner, owner_name, node_id, direction,
         sender_node_id, target_node_id, text, status, created_at, updated_at, received_at)
       VALUES ($1, $2, 'site', $3, $4, $5, $6, 'inbound', $6, '!0000abcd', $7, 'received', $8, $8, $8)`,
      [
        site,
        id,
        subscriber,
        subscriber === null ? null : `upstream:${subscriber}`,
        subscriber,
        node,
        text,
        at,
      ],
    );
    await poolA.query(
      `INSERT INTO message_transitions (site_id, message_id, seq, status, reason, at) VALUES ($1, $2, 1, 'received', NULL, $3)`,
      [site, id, at],
    );
    return id;
  }

  // --- sending ---

  describe('POST /api/v1/messages', () => {
    it('202 with the record and Location; stores it queued for the site that heard the node last, with its command', async () => {
      const app = appOn(poolA);
      const { name, token, node } = await scene();
      const res = await call(app, 'POST', '/', {
        token,
        body: { target_node_id: node, text: 'Are you at the hut?' },
      });
      expect(res.status).toBe(202);
      expect(messageRecordSchema.strict().parse(res.body)).toEqual(res.body);
      expect(res.body).toMatchObject({
        direction: 'outbound',
        status: 'queued',
        text: 'Are you at the hut?',
        target_node_id: node,
        sender_node_id: null,
      });
      expect(res.body.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(res.headers.get('location')).toBe(`/api/v1/messages/${res.body.id}`);

      const row = await messageRow(res.body.id);
      expect(row).toMatchObject({
        site_id: SITE_A,
        origin: 'upstream',
        subscriber: name,
        owner: `upstream:${name}`,
        owner_name: name,
        node_id: node,
        direction: 'outbound',
        status: 'queued',
        text: 'Are you at the hut?',
      });
      const created = Date.parse(res.body.created_at);
      expect(row.created_at).toBe(created);
      const transitions = await poolA.query(
        'SELECT status, seq FROM message_transitions WHERE message_id = $1',
        [res.body.id],
      );
      expect(transitions.rows).toEqual([{ status: 'queued', seq: 1 }]);
      const commands = await commandsFor(res.body.id);
      expect(commands).toHaveLength(1);
      expect(commands[0]).toMatchObject({ site_id: SITE_A, kind: 'text', acked_at: null });
      expect(commands[0].body).toEqual({
        message_id: res.body.id,
        owner: name,
        owner_name: name,
        node_id: node,
        text: 'Are you at the hut?',
        created_at: created,
      });
    });

    it('passes the subscriber’s hold_hours down to the site with the text', async () => {
      const app = appOn(poolA);
      const { token, node } = await scene();
      const res = await call(app, 'POST', '/', {
        token,
        body: { target_node_id: node, text: 'Back by dark?', hold_hours: 6.5 },
      });
      expect(res.status).toBe(202);
      const commands = await commandsFor(res.body.id);
      expect(commands[0].body).toMatchObject({ text: 'Back by dark?', hold_hours: 6.5 });
    });

    it('goes to the other site once that one heard the node later; a tie goes to the first site id', async () => {
      const app = appOn(poolA);
      const { token, node } = await scene();
      await heard(SITE_B, node, 3_000);
      const res = await call(app, 'POST', '/', { token, body: { target_node_id: node, text: 'now via B' } });
      expect(res.status).toBe(202);
      expect((await messageRow(res.body.id)).site_id).toBe(SITE_B);
      expect((await commandsFor(res.body.id)).map((c) => c.site_id)).toEqual([SITE_B]);

      await heard(SITE_A, node, 3_000);
      const tie = await call(app, 'POST', '/', { token, body: { target_node_id: node, text: 'a tie' } });
      expect((await commandsFor(tie.body.id)).map((c) => c.site_id)).toEqual([SITE_A]);

      const never = newNode();
      await heard(SITE_A, never, null);
      await heard(SITE_B, never, 5);
      const heardOnce = await call(app, 'POST', '/', { token, body: { target_node_id: never, text: 'hi' } });
      expect((await commandsFor(heardOnce.body.id)).map((c) => c.site_id)).toEqual([SITE_B]);
    });

    it('passes over a revoked site: the next most recent one carries the text; known only there is a 404', async () => {
      const app = appOn(poolA);
      const { token, node } = await scene();
      const revoked = `site-r-${randomBytes(3).toString('hex')}`;
      await poolA.query(
        `INSERT INTO sites (site_id, public_jwks, created_at, revoked_at) VALUES ($1, '{"keys":[]}', 0, 1)`,
        [revoked],
      );
      await heard(revoked, node, 9_999);
      const res = await call(app, 'POST', '/', { token, body: { target_node_id: node, text: 'not via r' } });
      expect((await commandsFor(res.body.id)).map((c) => c.site_id)).toEqual([SITE_A]);
      const only = newNode();
      await heard(revoked, only, 1);
      const before = await footprint();
      const gone = await call(app, 'POST', '/', { token, body: { target_node_id: only, text: 'hi' } });
      expect(gone.status).toBe(404);
      expect(await footprint()).toEqual(before);
    });

    it('404 for a node no site has heard of, storing nothing', async () => {
      const app = appOn(poolA);
      const { token } = await scene();
      const before = await footprint();
      const unknown = newNode();
      const res = await call(app, 'POST', '/', { token, body: { target_node_id: unknown, text: 'hello?' } });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.body.detail).toBe(`no node ${unknown} is known to any site`);
      expect(await footprint()).toEqual(before);
    });
  });

  describe('subscriptions and roles', () => {
    it('403 without a subscription, for another node, when pending or revoked; nothing stored', async () => {
      const app = appOn(poolA);
      const { name, token } = await user();
      const node = newNode();
      const other = newNode();
      await heard(SITE_A, node, 1);
      await heard(SITE_A, other, 1);
      const before = await footprint();
      const none = await call(app, 'POST', '/', { token, body: { target_node_id: node, text: 'hi' } });
      expect(none.status).toBe(403);
      expect(none.body).toMatchObject({
        status: 403,
        detail: `your subscription does not allow messaging ${node}`,
      });

      await subscribe(name, { nodes: [other] });
      await subscribe(name, { status: 'pending' });
      await subscribe(name, { status: 'revoked' });
      expect(
        (await call(app, 'POST', '/', { token, body: { target_node_id: node, text: 'hi' } })).status,
      ).toBe(403);
      expect(await footprint()).toEqual(before);
      expect(
        (await call(app, 'POST', '/', { token, body: { target_node_id: other, text: 'hi' } })).status,
      ).toBe(202);
    });

    it('403 once it has expired, with the lapsed wording (and the renew link of a paid one)', async () => {
      const app = appOn(poolA);
      const { name, token } = await user();
      const node = newNode();
      await heard(SITE_A, node, 1);
      const expiresAt = T0 - 60_000;
      clock = () => T0;
      try {
        await subscribe(name, { nodes: [node], expiresAt });
        const before = await footprint();
        const late = await call(app, 'POST', '/', {
          token,
          body: { target_node_id: node, text: 'too late' },
        });
        expect(late.status).toBe(403);
        expect(late.body).toMatchObject({
          type: 'urn:meshhub:problem:subscription-lapsed',
          detail: `your subscription lapsed at ${new Date(expiresAt).toISOString()}; ask the hub operator to renew it`,
          lapsed_at: new Date(expiresAt).toISOString(),
        });
        await subscribe(name, { expiresAt: expiresAt + 1, source: 'billing', reference: 'sub-42' });
        const paid = await call(app, 'POST', '/', {
          token,
          body: { target_node_id: node, text: 'too late' },
        });
        expect(paid.body).toMatchObject({
          billing_subscription_id: 'sub-42',
          renew: '/api/v1/billing/subscriptions/sub-42/renew',
        });
        expect(await footprint()).toEqual(before);
        // Not yet expired: allowed.
        await subscribe(name, { nodes: [node], expiresAt: T0 + 1 });
        expect(
          (await call(app, 'POST', '/', { token, body: { target_node_id: node, text: 'in time' } })).status,
        ).toBe(202);
      } finally {
        clock = () => Date.now();
      }
    });

    it('admins need no subscription', async () => {
      const app = appOn(poolA);
      const { token } = await user(['admin']);
      const node = newNode();
      await heard(SITE_B, node, 1);
      const res = await call(app, 'POST', '/', { token, body: { target_node_id: node, text: 'ops check' } });
      expect(res.status).toBe(202);
    });

    it('401 without or with a bad token, 403 without the role; on every route', async () => {
      const app = appOn(poolA);
      const { token: viewer } = await user(['viewer']);
      const { token } = await user();
      const node = newNode();
      await heard(SITE_A, node, 1);
      const before = await footprint();
      const routes: [string, string, unknown?][] = [
        ['POST', '/', { target_node_id: node, text: 'hi' }],
        ['GET', '/conversations'],
        ['GET', `/conversations/${node}`],
        ['PATCH', `/conversations/${node}`, { nickname: 'x' }],
        ['GET', `/${randomUUID()}`],
        ['GET', '/unmatched'],
      ];
      for (const [method, path, body] of routes) {
        const missing = await call(app, method, path, { body });
        expect(missing.status, `${method} ${path}`).toBe(401);
        expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="meshhub"');
        const bad = await call(app, method, path, { body, token: `${token.slice(0, -4)}AAAA` });
        expect(bad.status, `${method} ${path}`).toBe(401);
        expect(bad.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
        const role = await call(app, method, path, { body, token: viewer });
        expect(role.status, `${method} ${path}`).toBe(403);
        expect(role.headers.get('www-authenticate')).toMatch(/error="insufficient_scope"/);
      }
      expect(await footprint()).toEqual(before);
    });
  });

  describe('bad input', () => {
    it('400 naming each field, 413, 415: nothing stored', async () => {
      const app = appOn(poolA);
      const { token, node } = await scene();
      const before = await footprint();
      const cases: [
        string,
        { body?: unknown; raw?: string; headers?: Record<string, string> },
        number,
        string?,
      ][] = [
        ['missing fields', { body: {} }, 400, 'target_node_id'],
        ['missing text', { body: { target_node_id: node } }, 400, 'text'],
        ['201 characters', { body: { target_node_id: node, text: 'x'.repeat(201) } }, 400, 'text'],
        ['over one packet', { body: { target_node_id: node, text: 'é'.repeat(120) } }, 400, 'text'],
        ['blank', { body: { target_node_id: node, text: '   ' } }, 400, 'text'],
        ['bad node id', { body: { target_node_id: 'a1b2c3d4', text: 'hi' } }, 400, 'target_node_id'],
        ['broadcast', { body: { target_node_id: '!ffffffff', text: 'hi' } }, 400, 'target_node_id'],
        ['unknown field', { body: { target_node_id: node, text: 'hi', urgent: true } }, 400, 'urgent'],
        ['not an object', { body: ['hi'] }, 400, '(body)'],
        [
          'hold past any hub’s',
          { body: { target_node_id: node, text: 'hi', hold_hours: 721 } },
          400,
          'hold_hours',
        ],
        ['negative hold', { body: { target_node_id: node, text: 'hi', hold_hours: -1 } }, 400, 'hold_hours'],
        [
          'hold as a string',
          { body: { target_node_id: node, text: 'hi', hold_hours: '6' } },
          400,
          'hold_hours',
        ],
        ['not JSON', { raw: '{"target_node_id": ' }, 400],
        ['empty', { raw: '', headers: { 'content-type': 'application/json' } }, 400],
        ['not application/json', { raw: 'hi', headers: { 'content-type': 'text/plain' } }, 415],
        ['oversized', { body: { target_node_id: node, text: 'x'.repeat(5000) } }, 413],
        [
          'bad Idempotency-Key',
          { body: { target_node_id: node, text: 'hi' }, headers: { 'idempotency-key': 'a b' } },
          400,
          'Idempotency-Key',
        ],
      ];
      for (const [what, options, status, field] of cases) {
        const res = await call(app, 'POST', '/', { token, ...options });
        expect(res.status, what).toBe(status);
        expect(res.headers.get('content-type'), what).toMatch(/^application\/problem\+json/);
        if (field)
          expect(
            res.body.errors.map((e: Json) => e.field),
            what,
          ).toContain(field);
      }
      const packet = await call(app, 'POST', '/', {
        token,
        body: { target_node_id: node, text: 'é'.repeat(120) },
      });
      expect(packet.body.errors[0].message).toMatch(/one radio packet: at most 233 bytes/);
      expect(await footprint()).toEqual(before);
    });
  });

  describe('Idempotency-Key', () => {
    it('a retry gets the first 202 again; the same key with another body is a 422; nothing stored twice', async () => {
      const app = appOn(poolA);
      const other = appOn(poolB);
      const { name, token, node } = await scene();
      const headers = { 'idempotency-key': 'retry-1' };
      const first = await call(app, 'POST', '/', {
        token,
        headers,
        body: { target_node_id: node, text: 'once' },
      });
      expect(first.status).toBe(202);
      const afterFirst = await footprint();
      const again = await call(other, 'POST', '/', {
        token,
        headers,
        body: { target_node_id: node, text: 'once' },
      });
      expect(again.status).toBe(202);
      expect(again.body).toEqual(first.body);
      expect(again.headers.get('location')).toBe(first.headers.get('location'));
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      const quoted = await call(app, 'POST', '/', {
        token,
        headers: { 'idempotency-key': '"retry-1"' },
        body: { target_node_id: node, text: 'once' },
      });
      expect(quoted.body).toEqual(first.body);

      const changed = await call(app, 'POST', '/', {
        token,
        headers,
        body: { target_node_id: node, text: 'twice' },
      });
      expect(changed.status).toBe(422);
      expect(changed.body.errors).toEqual([
        { field: 'Idempotency-Key', message: 'already used for another message' },
      ]);
      expect(await footprint()).toEqual(afterFirst);
      expect(await commandsFor(first.body.id)).toHaveLength(1);

      // As on the hub, a retry is answered before the subscription is looked at again.
      await poolA.query("UPDATE subscriptions SET status = 'revoked' WHERE subscriber = $1", [name]);
      const late = await call(app, 'POST', '/', {
        token,
        headers,
        body: { target_node_id: node, text: 'once' },
      });
      expect(late.status).toBe(202);
      expect(late.body).toEqual(first.body);
      expect(await footprint()).toEqual(afterFirst);

      // Another subscriber's key of the same name is theirs.
      const bob = await user();
      await subscribe(bob.name);
      const bobs = await call(app, 'POST', '/', {
        token: bob.token,
        headers,
        body: { target_node_id: node, text: 'twice' },
      });
      expect(bobs.status).toBe(202);
      expect(bobs.body.id).not.toBe(first.body.id);
    });

    it('the same key sent at once to two processes stores one message', async () => {
      const apps = [appOn(poolA), appOn(poolB)];
      const { name, token, node } = await scene();
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          call(apps[i % 2]!, 'POST', '/', {
            token,
            headers: { 'idempotency-key': 'race' },
            body: { target_node_id: node, text: 'race' },
          }),
        ),
      );
      expect(results.map((r) => r.status)).toEqual(Array(6).fill(202));
      expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
      const count = await poolA.query('SELECT count(*)::int AS n FROM messages WHERE subscriber = $1', [
        name,
      ]);
      expect(count.rows[0].n).toBe(1);
    });
  });

  describe('rate limits in PostgreSQL', () => {
    it('429 + Retry-After per subscriber, counted across two processes; a refusal stores nothing', async () => {
      clock = () => T0;
      try {
        const rates = { perSubscriber: { count: 2, windowMs: 3_600_000 }, perNode: GENEROUS };
        const [one, two] = [appOn(poolA, rates), appOn(poolB, rates)];
        const { token, node } = await scene();
        const send = (app: Hono) =>
          call(app, 'POST', '/', { token, body: { target_node_id: node, text: 'hi' } });
        expect((await send(one)).status).toBe(202);
        expect((await send(two)).status).toBe(202);
        const before = await footprint();
        for (const app of [one, two]) {
          const refused = await send(app);
          expect(refused.status).toBe(429);
          expect(refused.headers.get('retry-after')).toBe('1800');
          expect(refused.body.detail).toBe(
            'rate limit exceeded: you may send at most 2 messages per 1 h; retry in 1800 s',
          );
        }
        expect(await footprint()).toEqual(before);
        // The hub's bucket: one more every window / count.
        clock = () => T0 + 1_798_500;
        expect((await send(two)).headers.get('retry-after')).toBe('2');
        clock = () => T0 + 1_799_000;
        expect((await send(two)).headers.get('retry-after')).toBe('1');
        clock = () => T0 + 1_800_000;
        expect((await send(two)).status).toBe(202);
        expect((await send(one)).status).toBe(429);
      } finally {
        clock = () => Date.now();
      }
    });

    it('429 per node whoever sends, and a request refused by one limit takes nothing of the other', async () => {
      clock = () => T0;
      try {
        const rates = {
          perSubscriber: { count: 2, windowMs: 60_000 },
          perNode: { count: 2, windowMs: 300_000 },
        };
        const [one, two] = [appOn(poolA, rates), appOn(poolB, rates)];
        const node = newNode();
        const spare = newNode();
        await heard(SITE_A, node, 1);
        await heard(SITE_A, spare, 1);
        const [alice, bob] = [await user(), await user()];
        await subscribe(alice.name);
        await subscribe(bob.name);
        const send = (app: Hono, token: string, to = node) =>
          call(app, 'POST', '/', { token, body: { target_node_id: to, text: 'hi' } });
        expect((await send(one, alice.token)).status).toBe(202);
        expect((await send(two, bob.token)).status).toBe(202);
        const refused = await send(one, bob.token);
        expect(refused.status).toBe(429);
        expect(refused.headers.get('retry-after')).toBe('150');
        expect(refused.body.detail).toBe(
          `rate limit exceeded: ${node} may receive at most 2 messages per 5 min; retry in 150 s`,
        );
        // Bob's refused send to the full node took none of his own allowance.
        expect((await send(two, bob.token, spare)).status).toBe(202);
        expect((await send(one, bob.token, spare)).status).toBe(429);
      } finally {
        clock = () => Date.now();
      }
    });

    it('many sends at once through two processes: exactly the limit passes', async () => {
      clock = () => T0;
      try {
        const rates = { perSubscriber: { count: 3, windowMs: 3_600_000 }, perNode: GENEROUS };
        const apps = [appOn(poolA, rates), appOn(poolB, rates)];
        const { name, token, node } = await scene();
        const results = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            call(apps[i % 2]!, 'POST', '/', { token, body: { target_node_id: node, text: `n${i}` } }),
          ),
        );
        expect(results.filter((r) => r.status === 202)).toHaveLength(3);
        expect(results.filter((r) => r.status === 429)).toHaveLength(9);
        const stored = await poolA.query('SELECT count(*)::int AS n FROM messages WHERE subscriber = $1', [
          name,
        ]);
        expect(stored.rows[0].n).toBe(3);
      } finally {
        clock = () => Date.now();
      }
    });

    it('property: passes and refuses exactly as the hub’s in-memory RateLimiter, with the same Retry-After', async () => {
      // Binary-exact rates (4 per 65.536 s), so the hub's floating-point bucket has no rounding to differ by.
      const limit = { count: 4, windowMs: 65_536 };
      let refusals = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.oneof(fc.integer({ min: 0, max: 3_000 }), fc.integer({ min: 0, max: 40_000 })), {
            minLength: 1,
            maxLength: 16,
          }),
          async (gaps) => {
            let now = T0;
            const hub = new RateLimiter({ now: () => now });
            const scope = `subscriber:prop-${randomUUID()}`;
            for (const gap of gaps) {
              now += gap;
              const expected = hub.check('k', limit);
              if (expected.ok) hub.consume('k', limit);
              const got = await withTransaction(poolA, (client) =>
                takeRateTokens(client, [{ key: scope, limit }], now),
              );
              expect(got.ok).toBe(expected.ok);
              if (!got.ok && !expected.ok) {
                refusals++;
                expect(got.retryAfterSeconds).toBe(expected.retryAfterSeconds);
              }
            }
          },
        ),
        { numRuns: 25 },
      );
      // The runs reached the limit, so refusals and their Retry-After were compared too.
      expect(refusals).toBeGreaterThan(0);
    });
  });

  // --- conversations ---

  describe('conversations', () => {
    it('one conversation per node across both sites; reading marks the caller’s replies read', async () => {
      const app = appOn(poolA);
      const { name, token, node } = await scene();
      await heard(SITE_A, node, 2_000, 'Hut Alpha');
      clock = () => T0;
      const viaA = await call(app, 'POST', '/', {
        token,
        body: { target_node_id: node, text: 'first, via A' },
      });
      await heard(SITE_B, node, 5_000, 'Hut Alpha (B)');
      clock = () => T0 + 1_000;
      const viaB = await call(app, 'POST', '/', {
        token,
        body: { target_node_id: node, text: 'second, via B' },
      });
      clock = () => Date.now();
      expect((await messageRow(viaA.body.id)).site_id).toBe(SITE_A);
      expect((await messageRow(viaB.body.id)).site_id).toBe(SITE_B);
      const r1 = await reply(SITE_A, name, node, 'reply at A', T0 + 2_000);
      const r2 = await reply(SITE_B, name, node, 'reply at B', T0 + 3_000);

      const list = await call(app, 'GET', '/conversations', { token });
      expect(list.status).toBe(200);
      expect(list.body.data).toEqual([
        {
          node_id: node,
          nickname: 'Hut Alpha (B)',
          latest_text: 'reply at B',
          latest_at: new Date(T0 + 3_000).toISOString(),
          unread_count: 2,
          // Both texts are still queued as far as the upstream knows; none failed.
          waiting_count: 2,
          failed_count: 0,
        },
      ]);

      const conversation = await call(app, 'GET', `/conversations/${node}`, { token });
      expect(conversation.status).toBe(200);
      expect(conversation.body.data.map((m: Json) => [m.text, m.direction, m.status])).toEqual([
        ['first, via A', 'outbound', 'queued'],
        ['second, via B', 'outbound', 'queued'],
        ['reply at A', 'inbound', 'read'],
        ['reply at B', 'inbound', 'read'],
      ]);
      for (const m of conversation.body.data) expect(messageRecordSchema.strict().parse(m)).toEqual(m);
      for (const id of [r1, r2]) {
        expect((await messageRow(id)).status).toBe('read');
        const history = await poolA.query(
          'SELECT status FROM message_transitions WHERE message_id = $1 ORDER BY seq',
          [id],
        );
        expect(history.rows.map((h) => h.status)).toEqual(['received', 'read']);
      }
      const after = await call(app, 'GET', '/conversations', { token });
      expect(after.body.data[0].unread_count).toBe(0);
      // Reading again changes nothing more.
      await call(app, 'GET', `/conversations/${node}`, { token });
      const transitions = await poolA.query(
        'SELECT count(*)::int AS n FROM message_transitions WHERE message_id = $1',
        [r1],
      );
      expect(transitions.rows[0].n).toBe(2);
    });

    it('another subscriber sees nothing of it, and their reading leaves it unread', async () => {
      const app = appOn(poolA);
      const { name, token, node } = await scene();
      const bob = await user();
      await subscribe(bob.name);
      const mine = await call(app, 'POST', '/', {
        token,
        body: { target_node_id: node, text: 'for alice only' },
      });
      const replyId = await reply(SITE_A, name, node, 'for alice', Date.now());

      expect((await call(app, 'GET', '/conversations', { token: bob.token })).body.data).toEqual([]);
      const bobsView = await call(app, 'GET', `/conversations/${node}`, { token: bob.token });
      expect(bobsView.status).toBe(200);
      expect(bobsView.body.data).toEqual([]);
      for (const id of [mine.body.id, replyId]) {
        const peek = await call(app, 'GET', `/${id}`, { token: bob.token });
        expect(peek.status).toBe(404);
        expect(peek.body.detail).toBe(`no message ${id}`);
      }
      expect(
        (await call(app, 'PATCH', `/conversations/${node}`, { token: bob.token, body: { nickname: 'x' } }))
          .status,
      ).toBe(404);
      expect((await messageRow(replyId)).status).toBe('received');
      const alices = await call(app, 'GET', '/conversations', { token });
      expect(alices.body.data[0]).toMatchObject({ node_id: node, unread_count: 1, nickname: node });
    });

    it('pages newest first with limit and a Link to the next page; a foreign cursor is a 400', async () => {
      const app = appOn(poolA);
      const { token } = await scene();
      const nodes = [newNode(), newNode(), newNode()];
      for (const [i, node] of nodes.entries()) {
        await heard(SITE_A, node, 1);
        clock = () => T0 + i * 1_000;
        expect(
          (await call(app, 'POST', '/', { token, body: { target_node_id: node, text: `to ${i}` } })).status,
        ).toBe(202);
      }
      clock = () => Date.now();
      const seen: string[] = [];
      let path: string | undefined = '/conversations?limit=2';
      while (path) {
        const page = await call(app, 'GET', path, { token });
        expect(page.status).toBe(200);
        seen.push(...page.body.data.map((c: Json) => c.node_id));
        const link = page.headers.get('link');
        path = link ? /^<\/api\/v1\/messages([^>]+)>; rel="next"$/.exec(link)![1] : undefined;
      }
      expect(seen).toEqual([...nodes].reverse());
      const bad = await call(app, 'GET', '/conversations?cursor=nope', { token });
      expect(bad.status).toBe(400);
      expect(bad.body.errors[0].field).toBe('cursor');
      expect((await call(app, 'GET', '/conversations?limit=0', { token })).status).toBe(400);
    });

    it('pages a conversation oldest first', async () => {
      const app = appOn(poolA);
      const { token, node } = await scene();
      for (let i = 0; i < 5; i++) {
        clock = () => T0 + i;
        await call(app, 'POST', '/', { token, body: { target_node_id: node, text: `m${i}` } });
      }
      clock = () => Date.now();
      const texts: string[] = [];
      let path: string | undefined = `/conversations/${node}?limit=2`;
      while (path) {
        const page = await call(app, 'GET', path, { token });
        texts.push(...page.body.data.map((m: Json) => m.text));
        const link = page.headers.get('link');
        path = link ? /^<\/api\/v1\/messages([^>]+)>; rel="next"$/.exec(link)![1] : undefined;
      }
      expect(texts).toEqual(['m0', 'm1', 'm2', 'm3', 'm4']);
      expect((await call(app, 'GET', '/conversations/!nothex00', { token })).status).toBe(400);
    });

    it('PATCH sets and clears the caller’s nickname; 404 without a conversation', async () => {
      const app = appOn(poolA);
      const { token, node } = await scene();
      await heard(SITE_A, node, 2_000, 'Hut Alpha');
      expect(
        (await call(app, 'PATCH', `/conversations/${node}`, { token, body: { nickname: 'Gran' } })).status,
      ).toBe(404);
      await call(app, 'POST', '/', { token, body: { target_node_id: node, text: 'hi' } });
      const set = await call(app, 'PATCH', `/conversations/${node}`, {
        token,
        body: { nickname: '  Gran  ' },
      });
      expect(set.status).toBe(200);
      expect(set.body).toMatchObject({ node_id: node, nickname: 'Gran', latest_text: 'hi', unread_count: 0 });
      expect((await call(app, 'GET', '/conversations', { token })).body.data[0].nickname).toBe('Gran');
      const cleared = await call(app, 'PATCH', `/conversations/${node}`, { token, body: { nickname: null } });
      expect(cleared.body.nickname).toBe('Hut Alpha');
      const bad = await call(app, 'PATCH', `/conversations/${node}`, { token, body: { nickname: '' } });
      expect(bad.status).toBe(400);
      expect(bad.body.errors[0].field).toBe('nickname');
    });
  });

  describe('GET /{id}, /unmatched, /stream', () => {
    it('the caller’s message with its history, as the hub’s detail without attempts', async () => {
      const app = appOn(poolA);
      const { token, node } = await scene();
      const sent = await call(app, 'POST', '/', { token, body: { target_node_id: node, text: 'detail' } });
      const detail = await call(app, 'GET', `/${sent.body.id}`, { token });
      expect(detail.status).toBe(200);
      expect(messageDetailSchema.strict().parse(detail.body)).toEqual(detail.body);
      expect(detail.body).toMatchObject({ id: sent.body.id, node_id: node, status: 'queued' });
      expect(detail.body.attempts).toBeUndefined();
      expect(detail.body.history).toEqual([{ status: 'queued', at: sent.body.created_at }]);
      // The site that carries it: the chat says when that site is offline (GET /api/v1/sites).
      expect(detail.body.site_id).toBe((await messageRow(sent.body.id)).site_id);
      const badId = await call(app, 'GET', '/not-a-uuid', { token });
      expect(badId.status).toBe(400);
      expect(badId.body.errors).toEqual([{ field: 'id', message: 'must be a message id (a UUID)' }]);
      expect((await call(app, 'GET', `/${randomUUID()}`, { token })).status).toBe(404);
    });

    it('admins list texts nobody could be matched with, and may open them; subscribers get 403', async () => {
      const app = appOn(poolA);
      const { token: admin } = await user(['admin']);
      const { token } = await scene();
      const node = newNode();
      const stray = await reply(SITE_B, null, node, 'who is there?', T0 + 10_000);
      const list = await call(app, 'GET', '/unmatched?limit=10000', { token: admin });
      expect(list.status).toBe(200);
      const found = list.body.data.find((m: Json) => m.id === stray);
      expect(found).toMatchObject({
        text: 'who is there?',
        node_id: node,
        direction: 'inbound',
        status: 'received',
      });
      expect(messageDetailSchema.strict().parse(found)).toEqual(found);
      expect((await call(app, 'GET', `/${stray}`, { token: admin })).status).toBe(200);
      expect((await call(app, 'GET', `/${stray}`, { token })).status).toBe(404);
      const refused = await call(app, 'GET', '/unmatched', { token });
      expect(refused.status).toBe(403);
      expect(refused.body.detail).toBe('only admins see texts nobody could be matched with');
    });

    it('the live stream is not served upstream: 404 problem', async () => {
      const app = appOn(poolA);
      const { token } = await user();
      for (const [method, path] of [
        ['GET', '/stream'],
        ['POST', '/stream/tickets'],
      ] as const) {
        const res = await call(app, method, path, { token });
        expect(res.status).toBe(404);
        expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(res.body.detail).toMatch(/no live message stream/);
      }
    });
  });

  // --- a site's answer ---

  describe('messagingOnAck', () => {
    it('a text the site rejected fails its message with the reason; applied and duplicate change nothing', async () => {
      const app = appOn(poolA);
      const { token, node } = await scene();
      const onAck = messagingOnAck(poolA);
      const sent = await call(app, 'POST', '/', {
        token,
        body: { target_node_id: node, text: 'to the radio itself' },
      });
      const [command] = await commandsFor(sent.body.id);
      for (const result of ['applied', 'duplicate'] as const) {
        await onAck(SITE_A, { type: 'ack', id: Number(command.id), result }, command);
        expect((await messageRow(sent.body.id)).status).toBe('queued');
      }
      await onAck(
        SITE_A,
        {
          type: 'ack',
          id: Number(command.id),
          result: 'rejected',
          reason: "the node is the hub's own radio",
        },
        { id: Number(command.id), kind: command.kind, body: command.body },
      );
      const row = await messageRow(sent.body.id);
      expect(row).toMatchObject({
        status: 'failed',
        failure_code: 'rejected_by_site',
        failure_reason: "the node is the hub's own radio",
      });
      const detail = await call(app, 'GET', `/${sent.body.id}`, { token });
      expect(detail.body).toMatchObject({ status: 'failed', failure_code: 'rejected_by_site' });
      expect(detail.body.history.map((h: Json) => [h.status, h.reason])).toEqual([
        ['queued', undefined],
        ['failed', "the node is the hub's own radio"],
      ]);
      // Acknowledged again (a resend): no second transition.
      await onAck(
        SITE_A,
        { type: 'ack', id: Number(command.id), result: 'rejected', reason: 'again' },
        command,
      );
      expect((await call(app, 'GET', `/${sent.body.id}`, { token })).body.history).toHaveLength(2);
    });

    it('leaves a message the site already reported further alone', async () => {
      const app = appOn(poolA);
      const { token, node } = await scene();
      const sent = await call(app, 'POST', '/', { token, body: { target_node_id: node, text: 'delivered' } });
      await poolA.query("UPDATE messages SET status = 'delivered' WHERE id = $1", [sent.body.id]);
      const [command] = await commandsFor(sent.body.id);
      await messagingOnAck(poolA)(
        SITE_A,
        { type: 'ack', id: Number(command.id), result: 'rejected', reason: 'late' },
        command,
      );
      expect((await messageRow(sent.body.id)).status).toBe('delivered');
    });
  });
});
