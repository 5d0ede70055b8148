/**
 * The upstream's history answers follow batches by notification (UPSTREAM_HISTORY_LISTEN, the
 * default; sync/upstream/history-changes.ts): a batch applied by any process reaches another
 * process's cached year within moments, with no PostgreSQL query for a request that finds its
 * answer cached; and whenever the notifications cannot be trusted (the listening connection cut,
 * or silent for longer than allowed) every request checks with PostgreSQL again, so an answer is
 * never older than that bound. Every answer is compared byte for byte with an uncached query.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalIssuer } from '../../../src/auth/local-issuer.js';
import { type Batch, batchSchema } from '../../../sync/protocol.js';
import { BatchApplier } from '../../../sync/upstream/batch-apply.js';
import { migrateUpstream } from '../../../sync/upstream/db/migrate.js';
import { openPool } from '../../../sync/upstream/db/pool.js';
import { HistoryChangeListener } from '../../../sync/upstream/history-changes.js';
import { createUpstream, type UpstreamServer } from '../../../sync/upstream/main.js';
import { loadUpstreamSettings } from '../../../sync/upstream/settings.js';
import { SiteRegistry } from '../../../sync/upstream/sites.js';
import { PgWeatherReads, type UpstreamHistoryQuery } from '../../../sync/upstream/weather/pg-reads.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';

const skip = await skipWithoutPostgres();
const METRICS_TOKEN = 'history-notified-metrics-token-0123456789';

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 8, 1);
const DAYS = 30;
const NODE = '!0000beef';
// The channel is the database's, shared with every other test file's upstreams: a site id of
// this file's own keeps their batches out of its counts.
const SITE = `notified-${randomBytes(4).toString('hex')}`;
const iso = (ms: number) => new Date(ms).toISOString();

type Row = [string, number, ...(number | null)[]];

function row(ts: number, i: number): Row {
  return [NODE, ts, 10 + (i % 17) / 4, 50 + (i % 9), null, (i % 7) * 0.5, (i * 31) % 360, null, null, null];
}

async function until(check: () => Promise<boolean> | boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe.skipIf(skip)('upstream history answers, notified of every batch', () => {
  let schema: TestSchema;
  let pool: pg.Pool;
  let applier: BatchApplier;
  const dirs: string[] = [];
  let seq = 1;

  async function apply(rows: Row[]): Promise<void> {
    const batch: Batch = batchSchema.parse({
      protocol: 1,
      site_id: SITE,
      first_seq: seq,
      last_seq: seq,
      records: [{ seq: seq++, kind: 'readings', at: rows[0]![1], body: { rows } }],
      dropped: [],
      sent_at: Date.now(),
    });
    expect((await applier.apply(SITE, batch)).kind).toBe('applied');
  }

  const query = (interval: '1h' | '1d'): UpstreamHistoryQuery => ({
    siteId: SITE,
    nodeId: NODE,
    start: T0,
    end: T0 + (DAYS + 2) * DAY,
    interval,
    limit: 10_000,
  });

  async function uncached(q: UpstreamHistoryQuery): Promise<string> {
    return String((await new PgWeatherReads(pool).history(q)).body);
  }

  beforeAll(async () => {
    schema = await createTestSchema('history_notified');
    pool = openPool(schema.url, { max: 4 });
    await migrateUpstream(pool);
    applier = new BatchApplier(pool);
    const keys = mkdtempSync(join(tmpdir(), 'meshhub-history-notified-'));
    dirs.push(keys);
    await new SiteRegistry(pool).add({ siteId: SITE, publicJwks: (await LocalIssuer.open(keys)).jwks() });
    const rows: Row[] = [];
    for (let i = 0; i < (DAYS * DAY) / (15 * 60_000); i++) rows.push(row(T0 + i * 15 * 60_000, i));
    for (let i = 0; i < rows.length; i += 1_000) await apply(rows.slice(i, i + 1_000));
  });

  afterAll(async () => {
    await pool?.end();
    await schema?.drop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('over HTTP: cached answers need no query, and each batch of another process is in the answers within moments', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'meshhub-history-notified-up-'));
    dirs.push(dir);
    const reader: UpstreamServer = await createUpstream(
      loadUpstreamSettings({
        UPSTREAM_DATABASE_URL: schema.url,
        HTTP_PORT: '0',
        DATA_DIR: dir,
        WEB_ROOT: dir,
        // Series carry no positions: anonymous reads answer the same (read-access.test.ts covers who may read).
        UPSTREAM_PUBLIC_READ: 'true',
        UPSTREAM_METRICS_TOKEN: METRICS_TOKEN,
      }),
      { log: pino({ level: 'silent' }), defaultMetrics: false },
    );
    await reader.start();
    const metric = async (series: string) => {
      const text = await (
        await fetch(`http://127.0.0.1:${reader.port}/metrics`, {
          headers: { authorization: `Bearer ${METRICS_TOKEN}` },
        })
      ).text();
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return Number(line?.slice(series.length + 1));
    };
    const requests = () => metric('meshhub_upstream_history_queries_total{cause="request"}');
    const refills = () => metric('meshhub_upstream_history_queries_total{cause="refill"}');
    try {
      await until(async () => (await metric('meshhub_upstream_history_listening')) === 1);
      for (const interval of ['1h', '1d'] as const) {
        const q = query(interval);
        const url = `http://127.0.0.1:${reader.port}/api/v1/weather/history?${new URLSearchParams({
          node_id: NODE,
          site: SITE,
          start: iso(q.start),
          end: iso(q.end),
          interval,
          limit: '10000',
        })}`;
        const get = async () => {
          const res = await fetch(url);
          expect(res.status).toBe(200);
          return res.text();
        };
        expect(await get()).toBe(await uncached(q));
        const afterFirst = await requests();
        for (let i = 0; i < 5; i++) expect(await get()).toBe(await uncached(q));
        // Nothing changed: five answers from memory alone.
        expect(await requests()).toBe(afterFirst);
        const refilledBefore = await refills();

        // A newest bucket changed, a new bucket, a late reading in the middle, the first bucket.
        const changes = [
          T0 + DAYS * DAY - 60_000,
          T0 + DAYS * DAY + 50 * 60_000,
          T0 + 11 * DAY + 7 * 3_600_000 + 5,
          T0 + 1,
        ];
        for (const [i, ts] of changes.entries()) {
          const before = await requests();
          await apply([row(ts + (interval === '1h' ? 3 : 17), 5_000 + i)]);
          const want = await uncached(q);
          await until(async () => (await get()) === want);
          expect(await get()).toBe(want);
          // The notified drop loaded again at once (the series was asked for lately): no query
          // of the request's own; but for the change of the first bucket, which drops the whole
          // range, loaded by the request.
          expect(await requests()).toBe(before + (ts === T0 + 1 ? 1 : 0));
        }
        // This series' three loads again (and the other interval's, asked for lately too).
        expect(await refills()).toBeGreaterThanOrEqual(refilledBefore + 3);
      }
    } finally {
      await reader.stop();
    }
  });

  it('answers checked with PostgreSQL at once while the listening connection is cut, and notified again once it is back', async () => {
    const listener = new HistoryChangeListener(schema.url, {
      pingMs: 50,
      reconnectMs: { min: 1_500, max: 1_500 },
    });
    const queries = new PgWeatherReads(pool, Date.now, listener);
    await listener.start();
    const q = query('1h');
    const answer = async () => Buffer.from((await queries.historyBody(q)).body).toString('utf8');
    try {
      expect(listener.liveEpoch()).toBeDefined();
      expect(await answer()).toBe(await uncached(q));
      const cached = queries.historyQueries;
      expect(await answer()).toBe(await uncached(q));
      expect(queries.historyQueries).toBe(cached);

      const killed = listener.backendPid;
      await pool.query('SELECT pg_terminate_backend($1)', [killed]);
      await until(() => listener.liveEpoch() === undefined);
      // Not listening: a batch is in the very next answer, found by asking PostgreSQL.
      for (let i = 0; i < 3; i++) {
        await apply([row(T0 + DAYS * DAY - 120_000 + i, 6_000 + i)]);
        const before = queries.historyQueries;
        expect(await answer()).toBe(await uncached(q));
        expect(queries.historyQueries).toBe(before + 1);
      }

      await until(() => listener.liveEpoch() !== undefined && listener.backendPid !== killed);
      // A new connection: the site is checked once more, then answered from memory again.
      const before = queries.historyQueries;
      expect(await answer()).toBe(await uncached(q));
      expect(await answer()).toBe(await uncached(q));
      expect(queries.historyQueries).toBe(before + 1);
      await apply([row(T0 + DAYS * DAY - 30_000, 6_100)]);
      const want = await uncached(q);
      await until(async () => (await answer()) === want);
    } finally {
      await listener.stop();
    }
  });

  it('a connection that stops echoing its pings is not trusted past the allowed silence', async () => {
    let now = Date.now();
    const listener = new HistoryChangeListener(schema.url, {
      now: () => now,
      pingMs: 60_000,
      maxSilenceMs: 3_000,
    });
    const queries = new PgWeatherReads(pool, Date.now, listener);
    await listener.start();
    const q = query('1d');
    try {
      await queries.historyBody(q);
      await queries.historyBody(q);
      const cached = queries.historyQueries;
      expect(listener.liveEpoch()).toBeDefined();
      // No ping echoed for longer than allowed (none was sent: pingMs is a minute).
      now += 3_001;
      expect(listener.liveEpoch()).toBeUndefined();
      await queries.historyBody(q);
      expect(queries.historyQueries).toBe(cached + 1);
    } finally {
      await listener.stop();
    }
  });
});
