import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ReadingWriter } from '../../../src/store/reading-writer.js';
import { type Batch, SYNC_API } from '../../../sync/protocol.js';
import { Outbox } from '../../../sync/site/outbox.js';
import {
  READINGS_MAX_WAIT_MS,
  SYNC_STATE,
  WAKE_DEBOUNCE_MS,
  wakeDueAt,
} from '../../../sync/site/push-actor.js';
import { type ApplyOutcome, BatchApplier, type BatchTicket } from '../../../sync/upstream/batch-apply.js';
import { migrateUpstream } from '../../../sync/upstream/db/migrate.js';
import { openPool } from '../../../sync/upstream/db/pool.js';
import { syncRoutes } from '../../../sync/upstream/routes/sync-routes.js';
import { SiteRegistry } from '../../../sync/upstream/sites.js';
import { waitFor } from '../../helpers/hub.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';
import { openSyncSite } from '../helpers/loopback-upstream.js';

const skip = await skipWithoutPostgres();
const T0 = Date.UTC(2026, 10, 20, 8, 0, 0);

describe('when readings are due', () => {
  const none = { promptSince: undefined, readingsSince: undefined, readingsLast: 0 };

  it('a text or status: WAKE_DEBOUNCE_MS after the first', () => {
    expect(wakeDueAt(none, 2_000)).toBeUndefined();
    expect(wakeDueAt({ ...none, promptSince: 1_000 }, 2_000)).toBe(1_000 + WAKE_DEBOUNCE_MS);
  });

  it('readings: once none came for the debounce, at the latest READINGS_MAX_WAIT_MS after the first', () => {
    expect(wakeDueAt({ ...none, readingsSince: 1_000, readingsLast: 1_000 }, 2_000)).toBe(3_000);
    // More kept coming: the quiet period starts again from the last.
    expect(wakeDueAt({ ...none, readingsSince: 1_000, readingsLast: 9_000 }, 2_000)).toBe(11_000);
    // They never stop: pushed anyway.
    expect(wakeDueAt({ ...none, readingsSince: 1_000, readingsLast: 60_000 }, 2_000)).toBe(
      1_000 + READINGS_MAX_WAIT_MS,
    );
    // A debounce longer than the cap: the debounce.
    expect(wakeDueAt({ ...none, readingsSince: 0, readingsLast: 500_000 }, 600_000)).toBe(600_000);
    // A text meanwhile goes first.
    expect(wakeDueAt({ promptSince: 5_000, readingsSince: 1_000, readingsLast: 9_000 }, 2_000)).toBe(
      5_000 + WAKE_DEBOUNCE_MS,
    );
  });
});

/** An upstream process: its own pool and applier on the shared database; the first batch slow. */
class Process {
  readonly app = new Hono();
  readonly pool: pg.Pool;
  slowFirst = true;
  /** Called as each batch is applied (before its answer). */
  onBatch: ((batch: Batch) => void) | undefined;

  constructor(url: string) {
    this.pool = openPool(url, { max: 4 });
    const self = this;
    class Applier extends BatchApplier {
      override async apply(
        siteId: string,
        batch: Batch,
        jti?: { value: string; expiresAt: number },
        ticket?: BatchTicket,
      ): Promise<ApplyOutcome> {
        // The first batch takes its time here: the next, sent meanwhile to the other process,
        // gets there before it is applied.
        if (self.slowFirst && batch.first_seq === 1) await new Promise((r) => setTimeout(r, 300));
        const outcome = await super.apply(siteId, batch, jti, ticket);
        self.onBatch?.(batch);
        return outcome;
      }
    }
    this.app.route(
      SYNC_API,
      syncRoutes({ sites: new SiteRegistry(this.pool), applier: new Applier(this.pool) }),
    );
  }
}

/** Two processes behind a balancer that takes turns, per request. */
class Balanced {
  private server: Server | undefined;
  readonly answers: { process: number; status: number; first?: number }[] = [];
  port = 0;
  private turn = 0;

  constructor(readonly processes: Process[]) {}

  async start(): Promise<void> {
    const listeners = this.processes.map((p) => getRequestListener(p.app.fetch));
    const server = createServer((req, res) => {
      const which = this.turn++ % listeners.length;
      res.on('finish', () => this.answers.push({ process: which, status: res.statusCode }));
      void listeners[which]!(req, res);
    });
    server.on('upgrade', (_request, socket: Duplex) => socket.destroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    const closed = new Promise((resolve) => server.close(resolve));
    server.closeAllConnections();
    await closed;
  }
}

describe.skipIf(skip)('two batches in flight', () => {
  let schema: TestSchema;
  let admin: pg.Pool;
  const cleanups: Array<() => Promise<void> | void> = [];

  beforeAll(async () => {
    schema = await createTestSchema('pipeline');
    admin = openPool(schema.url, { max: 2 });
    await migrateUpstream(admin);
  });
  afterAll(async () => {
    await admin.end();
    await schema.drop();
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** A started balancer over `processes`; it stops, and their pools end, after the test. */
  async function balancedOver(processes: Process[]): Promise<Balanced> {
    cleanups.push(() => Promise.all(processes.map((p) => p.pool.end())).then(() => undefined));
    const balanced = new Balanced(processes);
    await balanced.start();
    cleanups.push(() => balanced.stop());
    return balanced;
  }

  async function site(url: string, siteId: string, env: Record<string, string> = {}) {
    const s = await openSyncSite({
      siteId,
      label: 'pipeline',
      env: { SYNC_UPSTREAM_URL: url, SYNC_RETRY_MAX: '1m', ...env },
      register: (publicJwks) => new SiteRegistry(admin).add({ siteId, publicJwks }),
      cleanup: (fn) => cleanups.push(fn),
    });
    return { ...s, outbox: new Outbox(s.db), metrics: s.metricsText };
  }

  it('a batch that reached the other process before the one in front is sent again, not refused', async () => {
    const balanced = await balancedOver([new Process(schema.url), new Process(schema.url)]);
    // Small batches (the smallest allowed), so there are many to keep in flight.
    const s = await site(`http://127.0.0.1:${balanced.port}`, 'pipelined', { SYNC_BATCH_MAX_BYTES: '4096' });
    const writer = new ReadingWriter(s.db);
    for (let i = 0; i < 600; i++)
      writer.write([{ nodeId: 'roof-1', timestamp: T0 + i * 60_000, temperatureC: i / 7 }]);
    const last = s.outbox.lastSeq();
    await s.actor.start();
    cleanups.push(() => s.actor.stop());

    await waitFor(async () => {
      const { rows } = await admin.query<{ acked_seq: number }>(
        "SELECT acked_seq FROM sites WHERE site_id = 'pipelined'",
      );
      return s.outbox.ackedSeq() === last && rows[0]?.acked_seq === last ? true : undefined;
    }, 20_000);
    // It happened: the second batch found a gap at the other process.
    expect(balanced.answers.filter((a) => a.status === 409).length).toBeGreaterThan(0);
    // Not a refusal: nothing recorded, nothing counted, no backoff (SYNC_RETRY_MAX is a minute).
    expect(s.outbox.getState(SYNC_STATE.lastError)).toBeUndefined();
    expect(await s.metrics()).not.toMatch(/meshhub_sync_rejects_total\{/);
    // Every reading once, the batches contiguous.
    const { rows } = await admin.query<{ n: number; sum: number }>(
      "SELECT count(*)::int AS n, sum(temperature_c) AS sum FROM readings WHERE site_id = 'pipelined'",
    );
    expect(rows[0]!.n).toBe(600);
    expect(rows[0]!.sum).toBeCloseTo(
      Array.from({ length: 600 }, (_, i) => i / 7).reduce((a, b) => a + b),
      6,
    );
    const batches = await admin.query<{ first_seq: number; last_seq: number }>(
      "SELECT first_seq, last_seq FROM sync_batches WHERE site_id = 'pipelined' ORDER BY first_seq",
    );
    let next = 1;
    for (const b of batches.rows) {
      expect(b.first_seq).toBe(next);
      next = b.last_seq + 1;
    }
    expect(next).toBe(last + 1);
  });

  it('a cycle pushes what was there when it began: readings written meanwhile wait for their debounce', async () => {
    const process = new Process(schema.url);
    process.slowFirst = false;
    const balanced = await balancedOver([process]);
    const s = await site(`http://127.0.0.1:${balanced.port}`, 'rounds', {
      SYNC_READINGS_DEBOUNCE: '10m',
      SYNC_BATCH_MAX_BYTES: '4096',
    });
    const writer = new ReadingWriter(s.db);
    for (let i = 0; i < 200; i++)
      writer.write([{ nodeId: 'roof-1', timestamp: T0 + i * 60_000, temperatureC: i }]);
    const target = s.outbox.lastSeq();
    // While the first batch is applied, more readings come in (ingest goes on during a push).
    let more = 0;
    process.onBatch = () => {
      if (more++ > 0) return;
      for (let i = 0; i < 50; i++)
        writer.write([{ nodeId: 'roof-1', timestamp: T0 - (i + 1) * 60_000, pressurePa: 1e5 }]);
      s.ctx.bus.emit('reading.stored', { readings: [], source: 'http' });
    };
    await s.actor.start();
    cleanups.push(() => s.actor.stop());
    await waitFor(() => (s.outbox.ackedSeq() >= target ? true : undefined), 20_000);
    // The cycle ended where it began; the rest waits (10 minutes here) instead of keeping it going.
    await new Promise((r) => setTimeout(r, 300));
    expect(s.outbox.ackedSeq()).toBe(target);
    expect(s.outbox.stats().depth).toBe(50);
  });

  it('readings wait for the debounce; a status change goes at once and takes them along', async () => {
    const process = new Process(schema.url);
    process.slowFirst = false;
    const balanced = await balancedOver([process]);
    const s = await site(`http://127.0.0.1:${balanced.port}`, 'debounced', { SYNC_READINGS_DEBOUNCE: '10m' });
    await s.actor.start();
    cleanups.push(() => s.actor.stop());
    const held = async () =>
      (
        await admin.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM readings WHERE site_id = 'debounced'",
        )
      ).rows[0]!.n;
    // The first cycle (at start) finds an empty outbox.
    await waitFor(() => (s.outbox.getState(SYNC_STATE.lastSuccessAt) ? true : undefined));
    const writer = new ReadingWriter(s.db);
    writer.write([{ nodeId: 'roof-1', timestamp: T0, temperatureC: 1 }]);
    s.ctx.bus.emit('reading.stored', { readings: [], source: 'http' });
    // A billing change (a prompt kind) wakes it within WAKE_DEBOUNCE_MS, long before 10 minutes.
    s.ctx.bus.emit('billing.changed', { subscriptionId: 1 } as never);
    await waitFor(async () => ((await held()) === 1 ? true : undefined), 10_000);
  });
});
