/**
 * The upstream's history cache (sync/upstream/history-cache.ts) against PostgreSQL, checked on
 * every request (UPSTREAM_HISTORY_LISTEN=false): two upstream instances on one database, the way
 * several stateless processes share it. What one applies must be in the other's very next
 * answer, however much that one had cached (no waiting, no notification to wait for); and a
 * cached answer is byte for byte the answer of an uncached query of the same rows
 * (PgWeatherReads.history, which reads PostgreSQL every time). The notified way (the
 * default) is tested in history-notified.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalIssuer } from '../../../src/auth/local-issuer.js';
import { type Batch, batchSchema } from '../../../sync/protocol.js';
import { BatchApplier } from '../../../sync/upstream/batch-apply.js';
import { openPool } from '../../../sync/upstream/db/pool.js';
import { createUpstream, type UpstreamServer } from '../../../sync/upstream/main.js';
import { loadUpstreamSettings } from '../../../sync/upstream/settings.js';
import { SiteRegistry } from '../../../sync/upstream/sites.js';
import { PgWeatherReads, type UpstreamHistoryQuery } from '../../../sync/upstream/weather/pg-reads.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';

const skip = await skipWithoutPostgres();

const HOUR = 3_600_000;
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 8, 1); // 2026-09-01T00:00:00Z
const DAYS = 20;
const NODE = '!0000c0de';
const SITE = 'ridge';
const iso = (ms: number) => new Date(ms).toISOString();

type Row = [string, number, ...(number | null)[]];

/** A reading row of the `readings` record: node, ts, then the 8 metrics (null: absent). */
function row(ts: number, i: number): Row {
  return [
    NODE,
    ts,
    8 + ((i * 7) % 23) / 3,
    i % 2 === 0 ? 40 + (i % 9) * 1.1 : null,
    100_000 + ((i * 13) % 700) * 1.7,
    ((i * 5) % 11) * 0.7,
    (350 + i * 37) % 360,
    i % 3 === 0 ? 3 + i / 7 : null,
    null,
    i % 4 === 1 ? 120.5 + i : null,
  ];
}

describe.skipIf(skip)('upstream history cache, two upstream instances on one database', () => {
  let schema: TestSchema;
  const dirs: string[] = [];
  /** Answers history (and caches it). */
  let reader: UpstreamServer;
  /** Applies batches, as another process behind the same load balancer would. */
  let writer: UpstreamServer;
  let applier: BatchApplier;
  let seq = 1;

  async function start(): Promise<UpstreamServer> {
    const dir = mkdtempSync(join(tmpdir(), 'meshhub-history-cache-'));
    dirs.push(dir);
    const upstream = await createUpstream(
      loadUpstreamSettings({
        UPSTREAM_DATABASE_URL: schema.url,
        HTTP_PORT: '0',
        DATA_DIR: dir,
        WEB_ROOT: join(dir, 'no-web'),
        UPSTREAM_HISTORY_LISTEN: 'false',
        // Series carry no positions: anonymous reads answer the same (read-access.test.ts covers who may read).
        UPSTREAM_PUBLIC_READ: 'true',
      }),
      { log: pino({ level: 'silent' }), defaultMetrics: false },
    );
    await upstream.start();
    return upstream;
  }

  /** One batch of the site with these reading rows, applied by the writer instance. */
  async function apply(rows: Row[]): Promise<void> {
    const records = [];
    for (let i = 0; i < rows.length; i += 1_000) {
      records.push({
        seq: seq++,
        kind: 'readings',
        at: rows[i]![1],
        body: { rows: rows.slice(i, i + 1_000) },
      });
    }
    const batch: Batch = batchSchema.parse({
      protocol: 1,
      site_id: SITE,
      first_seq: records[0]!.seq,
      last_seq: seq - 1,
      records,
      dropped: [],
      sent_at: Date.now(),
    });
    expect((await applier.apply(SITE, batch)).kind).toBe('applied');
  }

  const path = (params: Record<string, string>) =>
    `/api/v1/weather/history?${new URLSearchParams({ node_id: NODE, site: SITE, limit: '10000', ...params })}`;

  async function get(
    upstream: UpstreamServer,
    url: string,
  ): Promise<{ status: number; body: string; link: string | null }> {
    const res = await fetch(`http://127.0.0.1:${upstream.port}${url}`);
    return { status: res.status, body: await res.text(), link: res.headers.get('link') };
  }

  /** The same page read straight from PostgreSQL (no cache), as the route would write it. */
  async function uncached(query: UpstreamHistoryQuery): Promise<string> {
    const pool = openPool(schema.url, { max: 1 });
    try {
      return String((await new PgWeatherReads(pool).history(query)).body);
    } finally {
      await pool.end();
    }
  }

  beforeAll(async () => {
    schema = await createTestSchema('history_cache');
    reader = await start();
    writer = await start();
    applier = new BatchApplier(writer.pool);
    const keys = mkdtempSync(join(tmpdir(), 'meshhub-history-keys-'));
    dirs.push(keys);
    const issuer = await LocalIssuer.open(keys);
    await new SiteRegistry(writer.pool).add({ siteId: SITE, publicJwks: issuer.jwks() });
    // 20 days of 10-minute readings.
    const rows: Row[] = [];
    for (let i = 0; i < (DAYS * DAY) / (10 * 60_000); i++) rows.push(row(T0 + i * 10 * 60_000, i));
    await apply(rows);
  });

  afterAll(async () => {
    await reader?.stop();
    await writer?.stop();
    await schema?.drop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it.each(['1h', '1d'] as const)(
    'interval=%s: every answer after a batch applied by the other instance holds it, at once',
    async (interval) => {
      const start = T0;
      const end = T0 + (DAYS + 1) * DAY;
      const url = path({ start: iso(start), end: iso(end), interval });
      const query: UpstreamHistoryQuery = { siteId: SITE, nodeId: NODE, start, end, interval, limit: 10_000 };
      // Cached by the reader (twice: the second answer is the cache's).
      const first = await get(reader, url);
      expect(first.status).toBe(200);
      expect((await get(reader, url)).body).toBe(first.body);
      expect(first.body).toBe(await uncached(query));

      // New readings in the newest bucket, a late one in the middle, a new bucket after the last:
      // each applied by the writer and asked of the reader the moment the apply returns.
      const changes: Row[][] = [
        [row(T0 + DAYS * DAY - 60_000, 9001)],
        [row(T0 + 7 * DAY + 5 * HOUR + 123, 9002)],
        [row(T0 + DAYS * DAY + 30 * 60_000, 9003)],
        [row(T0 + 3, 9004), row(T0 + DAYS * DAY + 40 * 60_000, 9005)],
      ];
      for (let round = 0; round < 25; round++) {
        const change = changes[round % changes.length]!.map(
          (r) => [r[0], r[1] + (interval === '1h' ? 7 : 11) * (round + 1), ...r.slice(2)] as Row,
        );
        await apply(change);
        const after = await get(reader, url);
        expect(after.status).toBe(200);
        expect(after.body).toBe(await uncached(query));
      }
      // The writer never asked for history: whatever the reader knew, it learned from PostgreSQL.
      expect((await get(reader, url)).body).not.toBe(first.body);
    },
  );

  it('answers every page of a walk with the bytes of the uncached query, before and after a change', async () => {
    const start = T0 + 2 * DAY + 30 * 60_000;
    const end = T0 + 9 * DAY;
    for (const interval of ['1h', '1d'] as const) {
      for (const round of [0, 1]) {
        if (round === 1) await apply([row(T0 + 4 * DAY + 90 * 60_000 + 17, 9100)]);
        let after: number | undefined;
        let next: string | undefined = path({ start: iso(start), end: iso(end), interval, limit: '13' });
        let pages = 0;
        while (next) {
          const res = await get(reader, next);
          expect(res.status).toBe(200);
          const query: UpstreamHistoryQuery = {
            siteId: SITE,
            nodeId: NODE,
            start,
            end,
            interval,
            limit: 13,
            ...(after === undefined ? {} : { after }),
          };
          expect(res.body).toBe(await uncached(query));
          const data = JSON.parse(res.body).data as Array<{ timestamp: string }>;
          after = Date.parse(data.at(-1)?.timestamp ?? iso(0));
          next = res.link ? /^<([^>]+)>; rel="next"$/.exec(res.link)![1] : undefined;
          pages++;
        }
        expect(pages).toBeGreaterThan(interval === '1h' ? 5 : 0);
      }
    }
  });
});
