/**
 * Issue 12 end to end: two hubs on the simulator (different seeds) and one upstream on a real
 * PostgreSQL, all on loopback, each party the real thing (the hubs' SQLite files, the sync
 * module's push and downlink, the upstream's HTTP server and batch apply).
 *
 * - every reading, node, message and status of each site reaches the upstream, exact counts;
 * - a node heard by both sites is listed for both;
 * - an internet subscriber on the upstream texts a node of site B: delivered, and the node's
 *   reply comes back into the subscriber's conversation on the upstream;
 * - site B offline while a text waits: queued upstream; B back → delivered, sent over the radio
 *   once.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MqttClient } from 'mqtt';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHub, type Hub } from '../../../hub/main.js';
import { loadConfig } from '../../../hub/settings.js';
import { LocalIssuer } from '../../../src/auth/local-issuer.js';
import { HubUserService } from '../../../src/auth/user-service.js';
import { messagingRoles } from '../../../src/mesh/simulator/messaging-responder.js';
import { createSimNetwork } from '../../../src/mesh/simulator/nodes.js';
import { UpstreamUserService } from '../../../sync/upstream/auth/user-service.js';
import { grantUpstreamSubscription } from '../../../sync/upstream/commands.js';
import { createUpstream, type UpstreamServer } from '../../../sync/upstream/main.js';
import { loadUpstreamSettings } from '../../../sync/upstream/settings.js';
import { SiteRegistry } from '../../../sync/upstream/sites.js';
import { mqttOf, waitFor } from '../../helpers/hub.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';
import { call, FAST_MESSAGING, type Json } from '../../messaging/helpers.js';
import { connect, endClients, envTelemetryEnvelope, meshTopic } from '../../mqtt/helpers.js';
import { signedIn } from '../upstream/helpers.js';

const skip = await skipWithoutPostgres();
const silent = pino({ level: 'silent' });
const CENTER = { latitude: 47.3769, longitude: 8.5417 };
const NODES = 5;

interface Site {
  id: string;
  seed: number;
  dataDir: string;
  hub?: Hub;
  baseUrl?: string;
}

let schema: TestSchema;
let upstream: UpstreamServer;
let upstreamUrl: string;
/** A signed-in user's Authorization header: the upstream's reads need one. */
let reader: Record<string, string>;
const scratch = mkdtempSync(join(tmpdir(), 'meshhub-two-sites-'));
const north: Site = { id: 'north', seed: 11, dataDir: join(scratch, 'north') };
const south: Site = { id: 'south', seed: 22, dataDir: join(scratch, 'south') };

/** Starts (or restarts, on the same data directory) a whole hub syncing with the upstream. */
async function startSite(site: Site): Promise<void> {
  const env = {
    ...FAST_MESSAGING,
    DATA_DIR: site.dataDir,
    HTTP_HOST: '127.0.0.1',
    HTTP_PORT: '0',
    MESH_API_PORT: '0',
    RADIO: 'sim',
    SIM_PORT: '0',
    SIM_SEED: String(site.seed),
    SIM_NODES: String(NODES),
    SIM_BACKFILL: '3h',
    MQTT_PORT: '0',
    LOG_LEVEL: 'silent',
    SYNC_UPSTREAM_URL: upstreamUrl,
    SYNC_SITE_ID: site.id,
    // Readings pushed as soon as they are stored, so a count and its sums are compared together.
    SYNC_READINGS_DEBOUNCE: '0s',
  };
  const hub = await createHub(loadConfig(env), { log: silent, defaultMetrics: false, env });
  await hub.start();
  site.hub = hub;
  site.baseUrl = `http://127.0.0.1:${hub.http.port}`;
}

async function stopSite(site: Site): Promise<void> {
  const hub = site.hub;
  site.hub = undefined;
  await hub?.stop();
}

const hubCount = (site: Site, sql: string): number => site.hub!.store.db.prepare(sql).pluck().get() as number;

async function upstreamCount(sql: string, ...params: unknown[]): Promise<number> {
  const { rows } = await upstream.pool.query<{ n: string | number }>(sql, params);
  return Number(rows[0]!.n);
}

/**
 * Waits until the upstream holds exactly what the site holds: as many readings, nodes and
 * messages, and every status transition the site went through (the upstream may add its own:
 * a subscriber reading a reply there).
 */
async function inStep(site: Site): Promise<void> {
  const tables = ['readings', 'nodes', 'messages'];
  await waitFor(
    async () => {
      for (const table of tables) {
        const here = hubCount(site, `SELECT count(*) FROM ${table}`);
        const there = await upstreamCount(`SELECT count(*) AS n FROM ${table} WHERE site_id = $1`, site.id);
        if (here !== there) return undefined;
      }
      const transitions = site
        .hub!.store.db.prepare(
          `SELECT m.public_id || ' ' || t.seq || ' ' || t.status FROM message_transitions t
           JOIN messages m ON m.id = t.message_id`,
        )
        .pluck()
        .all() as string[];
      const { rows } = await upstream.pool.query<{ k: string }>(
        "SELECT message_id::text || ' ' || seq || ' ' || status AS k FROM message_transitions WHERE site_id = $1",
        [site.id],
      );
      const upstreamKeys = new Set(rows.map((r) => r.k));
      return transitions.every((k) => upstreamKeys.has(k)) ? true : undefined;
    },
    30_000,
    `${site.id} in step with the upstream`,
  );
}

const networkOf = (site: Site) => createSimNetwork({ seed: site.seed, nodeCount: NODES, center: CENTER });

beforeAll(async () => {
  if (skip) return;
  schema = await createTestSchema('two_sites');
  const upstreamData = join(scratch, 'upstream');
  mkdirSync(upstreamData, { recursive: true });
  upstream = await createUpstream(
    loadUpstreamSettings({
      UPSTREAM_DATABASE_URL: schema.url,
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: '0',
      DATA_DIR: upstreamData,
      LOG_LEVEL: 'silent',
      MESSAGE_RATE_PER_SUBSCRIBER: '1000/1m',
      MESSAGE_RATE_PER_NODE: '1000/1m',
    }),
    { log: silent },
  );
  await upstream.start();
  upstreamUrl = `http://127.0.0.1:${upstream.port}`;
  reader = { authorization: await signedIn(upstream) };
  const sites = new SiteRegistry(upstream.pool);
  for (const site of [north, south]) {
    // The site's identity is its hub's own key, made in its data directory on first start.
    const issuer = await LocalIssuer.open(site.dataDir);
    await sites.add({ siteId: site.id, name: site.id, publicJwks: issuer.jwks() });
    await startSite(site);
  }
}, 120_000);

afterAll(async () => {
  await endClients();
  await stopSite(north);
  await stopSite(south);
  await upstream?.stop();
  await schema?.drop();
  rmSync(scratch, { recursive: true, force: true });
});

describe.skipIf(skip)('two sites and one upstream on PostgreSQL', () => {
  it('brings every reading, node, message and status of each site upstream, exact counts', async () => {
    // The same readings, not only as many: the count and the sums of one metric agree to the last
    // digit. (The simulator keeps storing readings, so the two are read until they agree; a lost
    // or altered reading never would. A site with nothing stored yet is not "in step".)
    for (const site of [north, south]) {
      let last: unknown;
      await waitFor(
        async () => {
          const here = site
            .hub!.store.db.prepare(
              'SELECT count(temperature_c) AS n, round(sum(temperature_c), 6) AS s, sum(ts) AS t FROM readings',
            )
            .get() as { n: number; s: number | null; t: number | null };
          const { rows } = await upstream.pool.query(
            'SELECT count(temperature_c) AS n, round(sum(temperature_c)::numeric, 6) AS s, sum(ts) AS t FROM readings WHERE site_id = $1',
            [site.id],
          );
          const there = {
            n: Number(rows[0].n),
            s: rows[0].s === null ? null : Number(rows[0].s),
            t: rows[0].t === null ? null : Number(rows[0].t),
          };
          last = { here, there };
          return here.n > 0 && JSON.stringify(here) === JSON.stringify(there) ? true : undefined;
        },
        30_000,
        () => `${site.id} readings alike upstream: ${JSON.stringify(last)}`,
      );
    }
    await inStep(north);
    await inStep(south);
    const sites = await call(upstreamUrl, 'GET', '/api/v1/sites', { headers: reader });
    expect(sites.status).toBe(200);
    expect((sites.body.data as Json[]).map((s) => [s.site_id, s.node_count])).toEqual([
      ['north', hubCount(north, 'SELECT count(*) FROM nodes')],
      ['south', hubCount(south, 'SELECT count(*) FROM nodes')],
    ]);
  });

  it('lists a node heard by both sites once for each', async () => {
    // A node of the south is heard by a north gateway too: its telemetry arrives over MQTT. (The
    // node out of the south radio's range: the texts below go to nodes only the south hears.)
    const shared = messagingRoles(networkOf(south)).outOfRange!;
    await new HubUserService(north.hub!.store.db).add({
      username: 'gw',
      password: 'gw-password',
      roles: ['device'],
    });
    const client: MqttClient = await connect(`mqtt://127.0.0.1:${mqttOf(north.hub!).port}`, {
      username: 'gw',
      password: 'gw-password',
    });
    await client.publishAsync(
      meshTopic(),
      Buffer.from(envTelemetryEnvelope(shared.num, 0x5eed01, { temperature: 7.5 })),
      {
        qos: 1,
      },
    );
    await inStep(north);
    const nodes: Json[] = await waitFor(
      async () => {
        const r = await call(upstreamUrl, 'GET', '/api/v1/nodes', { headers: reader });
        const rows = (r.body.data as Json[]).filter((n) => n.node_id === shared.id);
        return rows.length === 2 ? rows : undefined;
      },
      15_000,
      'the shared node listed for both sites',
    );
    expect(nodes.map((n) => n.site_id).sort()).toEqual(['north', 'south']);
    const latest = await call(
      upstreamUrl,
      'GET',
      `/api/v1/weather/latest?node_id=${encodeURIComponent(shared.id)}`,
      { headers: reader },
    );
    expect((latest.body.data as Json[]).map((r) => r.site_id)).toContain('north');
  });

  let alice: string;

  it('lets an internet subscriber text a node of site B: delivered, and the reply comes back upstream', async () => {
    await new UpstreamUserService(upstream.pool).add({
      username: 'alice',
      password: 'alice-password',
      roles: ['subscriber'],
    });
    await grantUpstreamSubscription(upstream.pool, {
      subscriber: 'alice',
      nodes: 'all',
      expiresAt: null,
      source: 'test',
    });
    const token = await call(upstreamUrl, 'POST', '/api/v1/auth/token', {
      body: { username: 'alice', password: 'alice-password' },
    });
    expect(token.status).toBe(200);
    alice = token.body.access_token;

    const replier = messagingRoles(networkOf(south)).repliers[0]!;
    const sent = await call(upstreamUrl, 'POST', '/api/v1/messages', {
      token: alice,
      body: { target_node_id: replier.id, text: 'Are you at the hut?' },
    });
    expect(sent.status).toBe(202);
    expect(sent.body.status).toBe('queued');
    const id = sent.body.id as string;
    expect(sent.headers.get('location')).toBe(`/api/v1/messages/${id}`);

    const delivered = await waitFor(
      async () => {
        const r = await call(upstreamUrl, 'GET', `/api/v1/messages/${id}`, { token: alice });
        return r.body.status === 'delivered' ? r.body : undefined;
      },
      20_000,
      'the text delivered',
    );
    expect(delivered.history.map((h: Json) => h.status)).toEqual(['queued', 'sent', 'delivered']);
    // It went out at site B, under the same id, once.
    const atSite = south
      .hub!.store.db.prepare('SELECT owner, attempts, status FROM messages WHERE public_id = ?')
      .get(id) as { owner: string; attempts: number; status: string };
    expect(atSite).toEqual({ owner: 'upstream:alice', attempts: 1, status: 'delivered' });
    expect(hubCount(north, `SELECT count(*) FROM messages WHERE public_id = '${id}'`)).toBe(0);

    const reply = await waitFor(
      async () => {
        const r = await call(
          upstreamUrl,
          'GET',
          `/api/v1/messages/conversations/${encodeURIComponent(replier.id)}`,
          {
            token: alice,
          },
        );
        return (r.body.data as Json[]).find((m) => m.direction === 'inbound');
      },
      20_000,
      'the reply upstream',
    );
    expect(reply.sender_node_id).toBe(replier.id);
    const conversations = await call(upstreamUrl, 'GET', '/api/v1/messages/conversations', { token: alice });
    expect((conversations.body.data as Json[]).map((c) => c.node_id)).toEqual([replier.id]);
  });

  it('keeps a text for an offline site waiting, and delivers it once when the site returns', async () => {
    const roles = messagingRoles(networkOf(south));
    const quiet = networkOf(south).nodes.find((n) => n !== roles.outOfRange && !roles.repliers.includes(n))!;
    await inStep(south);
    await stopSite(south);

    const sent = await call(upstreamUrl, 'POST', '/api/v1/messages', {
      token: alice,
      body: { target_node_id: quiet.id, text: 'Call me when you are back in range' },
    });
    expect(sent.status).toBe(202);
    const id = sent.body.id as string;
    // Nobody can carry it: it waits, queued, its command unacknowledged.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const waiting = await call(upstreamUrl, 'GET', `/api/v1/messages/${id}`, { token: alice });
    expect(waiting.body.status).toBe('queued');
    expect(
      await upstreamCount(
        "SELECT count(*) AS n FROM downlink WHERE site_id = 'south' AND acked_at IS NULL AND body->>'message_id' = $1",
        id,
      ),
    ).toBe(1);

    await startSite(south);
    await waitFor(
      async () => {
        const r = await call(upstreamUrl, 'GET', `/api/v1/messages/${id}`, { token: alice });
        return r.body.status === 'delivered' ? true : undefined;
      },
      30_000,
      'the waiting text delivered after the site came back',
    );
    const atSite = south
      .hub!.store.db.prepare(
        'SELECT count(*) AS copies, sum(attempts) AS attempts FROM messages WHERE public_id = ?',
      )
      .get(id) as { copies: number; attempts: number };
    expect(atSite).toEqual({ copies: 1, attempts: 1 });
    expect(
      south
        .hub!.store.db.prepare(
          'SELECT count(*) FROM message_packets p JOIN messages m ON m.id = p.message_id WHERE m.public_id = ?',
        )
        .pluck()
        .get(id),
    ).toBe(1);
    await inStep(south);
    await inStep(north);
  }, 90_000);
});
