/**
 * What a batch applied through the upstream's sync endpoint tells the open dashboards
 * (sync/upstream/server.ts wires BatchApplier's onApplied to `/api/v1/live`): per node the newest
 * reading the batch added, in the read API's shape with its site, and the nodes it updated; a
 * duplicate tells nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalIssuer } from '../../../src/auth/local-issuer.js';
import { createUpstream, type UpstreamServer } from '../../../sync/upstream/main.js';
import { loadUpstreamSettings } from '../../../sync/upstream/settings.js';
import { SiteRegistry } from '../../../sync/upstream/sites.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';
import { postSignedBatch } from '../helpers/batches.js';
import { liveEvents, signedIn } from './helpers.js';

const skip = await skipWithoutPostgres();
const T0 = Date.UTC(2026, 10, 20, 8, 0, 0);

describe.skipIf(skip)('the live stream of batches applied', () => {
  let schema: TestSchema;
  let dir: string;
  let upstream: UpstreamServer;
  let site: LocalIssuer;
  let authorization: string;

  beforeAll(async () => {
    schema = await createTestSchema('live');
    dir = mkdtempSync(join(tmpdir(), 'meshhub-sync-live-'));
    upstream = await createUpstream(
      loadUpstreamSettings({ UPSTREAM_DATABASE_URL: schema.url, HTTP_PORT: '0', DATA_DIR: join(dir, 'up') }),
      { log: pino({ level: 'silent' }), defaultMetrics: false },
    );
    await upstream.start();
    site = await LocalIssuer.open(join(dir, 'site'));
    await new SiteRegistry(upstream.pool).add({ siteId: 'north', publicJwks: site.jwks() });
    authorization = await signedIn(upstream);
  });
  afterAll(async () => {
    await upstream?.stop();
    await schema?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function post(batch: unknown): Promise<number> {
    const res = await postSignedBatch(`http://127.0.0.1:${upstream.port}`, site, batch);
    await res.arrayBuffer();
    return res.status;
  }

  it('tells the newest reading per node and the nodes a batch applied; a retry tells nothing', async () => {
    const live = await liveEvents(`http://127.0.0.1:${upstream.port}/api/v1/live`, { authorization });
    try {
      await live.next('hello');
      const batch = {
        protocol: 1,
        site_id: 'north',
        first_seq: 1,
        last_seq: 2,
        records: [
          {
            seq: 1,
            at: T0,
            kind: 'readings',
            body: {
              rows: [
                ['!0000000a', T0, 20, null, null, null, 359.6, null, null, null],
                ['!0000000a', T0 + 60_000, 21, 50, null, null, null, null, null, null],
                ['roof-1', T0, null, null, 101_325, null, null, null, null, null],
              ],
            },
          },
          {
            seq: 2,
            at: T0,
            kind: 'node',
            body: {
              node_num: 10,
              node_id: '!0000000a',
              short_name: 'A',
              long_name: null,
              hw_model: null,
              latitude: 52.5,
              longitude: null,
              altitude: null,
              last_heard: T0,
              battery_level: null,
              snr: null,
              updated_at: T0,
            },
          },
        ],
        dropped: [],
        sent_at: T0,
      };
      expect(await post(batch)).toBe(200);
      const readings = (await live.next('readings')) as { data: Record<string, unknown>[] };
      expect(readings.data.sort((a, b) => String(a.node_id).localeCompare(String(b.node_id)))).toEqual([
        {
          node_id: '!0000000a',
          site_id: 'north',
          timestamp: new Date(T0 + 60_000).toISOString(),
          temperature_c: 21,
          humidity_percent: 50,
        },
        { node_id: 'roof-1', site_id: 'north', timestamp: new Date(T0).toISOString(), pressure_pa: 101_325 },
      ]);
      expect(await live.next('node')).toEqual({
        node_id: '!0000000a',
        site_id: 'north',
        short_name: 'A',
        latitude: 52.5,
        last_heard: new Date(T0).toISOString(),
      });
      const seen = live.events.length;
      expect(await post(batch)).toBe(200); // a retry: a duplicate, applied before
      await new Promise((r) => setTimeout(r, 200));
      expect(live.events.slice(seen).filter((e) => e.event === 'readings' || e.event === 'node')).toEqual([]);
    } finally {
      await live.close();
    }
  });
});
