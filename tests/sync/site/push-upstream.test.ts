/**
 * The site's push (sync/site/push-actor.ts) against the REAL upstream sync routes on loopback
 * (sync/upstream/routes/sync-routes.ts over node:http, PostgreSQL in a fresh schema), with a
 * real SQLite file and the real outbox: exact counts upstream, an upstream that goes away and
 * comes back, an acknowledgement lost on the way, and a site clock hours off.
 */
import { describe, expect, it } from 'vitest';
import type { Reading } from '../../../src/domain/reading.js';
import { MessageRepository } from '../../../src/messaging/message-repository.js';
import { SubscriptionRepository } from '../../../src/messaging/subscription-repository.js';
import { NodeRepository } from '../../../src/store/nodes-repository.js';
import { ReadingWriter } from '../../../src/store/reading-writer.js';
import { Outbox } from '../../../sync/site/outbox.js';
import { SYNC_STATE } from '../../../sync/site/push-actor.js';
import { waitFor } from '../../helpers/hub.js';
import { skipWithoutPostgres } from '../../helpers/postgres.js';
import { type LoopbackUpstream, syncTestbed, type TestSite } from '../helpers/loopback-upstream.js';

const skip = await skipWithoutPostgres();
const bed = syncTestbed({ schemaPrefix: 'sitepush', poolMax: 4, skip });
const HOUR = 3_600_000;

interface Site extends TestSite {
  outbox: Outbox;
  readings: ReadingWriter;
}

/** A hub's database and sync actor, registered upstream with its own key; started when asked. */
async function site(
  upstream: LoopbackUpstream,
  options: { now?: () => number; env?: Record<string, string> } = {},
): Promise<Site> {
  const s = await bed.site(upstream, { idPrefix: 'site', ...options });
  return { ...s, outbox: new Outbox(s.db), readings: new ReadingWriter(s.db) };
}

const start = (s: Site) => bed.start(s);

/** Readings written one per write transaction, as a radio site's trickle in: one outbox entry each. */
function writeEach(s: Site, list: Reading[]): void {
  for (const r of list) s.readings.write([r]);
}

function readings(nodes: string[], count: number, from: number): Reading[] {
  const out: Reading[] = [];
  for (let i = 0; i < count; i++) {
    out.push({ nodeId: nodes[i % nodes.length]!, timestamp: from + i * 60_000, temperatureC: 10 + (i % 7) });
  }
  return out;
}

/** Waits until the upstream holds everything the site numbered, and the site knows it. */
async function drained(s: Site, upstream: LoopbackUpstream): Promise<number> {
  return waitFor(
    async () => {
      const { ackedSeq, lastSeq } = s.outbox.stats();
      if (ackedSeq !== lastSeq || lastSeq === 0) return undefined;
      const row = await upstream.sites.get(s.siteId);
      return row?.ackedSeq === lastSeq ? lastSeq : undefined;
    },
    20_000,
    'the outbox to drain upstream',
  );
}

const NODES = ['!0000a001', '!0000a002', '!0000a003'];
const READINGS_SQL = 'SELECT count(*) AS n FROM readings WHERE site_id = $1';

describe.skipIf(skip)('site push against the real upstream', () => {
  it('delivers every record once, in bounded batches, and a status change later on a wake', async () => {
    const upstream = await bed.upstream();
    const s = await site(upstream, { env: { SYNC_BATCH_MAX_RECORDS: '100' } });
    const t0 = Date.UTC(2026, 10, 20, 8, 0, 0);
    s.readings.write(readings(NODES, 450, t0));
    const nodes = new NodeRepository(s.db);
    NODES.forEach((id, i) => {
      nodes.upsert({ nodeNum: 0xa001 + i, nodeId: id, shortName: `N${i}`, lastHeard: t0 }, t0);
    });
    const messages = new MessageRepository(s.db);
    const message = messages.createOutbound({
      owner: 'alice',
      ownerName: 'Alice',
      nodeId: NODES[0]!,
      senderNodeId: '!0000abcd',
      text: 'hello field',
      at: t0,
    });
    new SubscriptionRepository(s.db).create({ subscriber: 'alice', nodes: [NODES[0]!], source: 'cli' });
    const total = s.outbox.stats().lastSeq;

    await start(s);
    expect(await drained(s, upstream)).toBe(total);
    expect(await upstream.count(READINGS_SQL, s.siteId)).toBe(450);
    expect(await upstream.count('SELECT count(*) AS n FROM nodes WHERE site_id = $1', s.siteId)).toBe(3);
    expect(await upstream.count('SELECT count(*) AS n FROM messages WHERE site_id = $1', s.siteId)).toBe(1);
    expect(
      await upstream.count('SELECT count(*) AS n FROM site_subscriptions WHERE site_id = $1', s.siteId),
    ).toBe(1);
    const batches = await bed.pool.query<{ first_seq: string; last_seq: string; records: number }>(
      'SELECT first_seq, last_seq, records FROM sync_batches WHERE site_id = $1 ORDER BY first_seq',
      [s.siteId],
    );
    // Contiguous, none over the record limit, every record in exactly one batch.
    let next = 1;
    for (const b of batches.rows) {
      expect(Number(b.first_seq)).toBe(next);
      expect(b.records).toBeLessThanOrEqual(100);
      next = Number(b.last_seq) + 1;
    }
    expect(next).toBe(total + 1);
    expect(batches.rows.reduce((sum, b) => sum + b.records, 0)).toBe(total);
    const metrics = await s.metricsText();
    expect(metrics).toContain(`meshhub_sync_records_sent_total ${total}`);
    expect(metrics).toContain(`meshhub_sync_batches_sent_total ${batches.rows.length}`);
    expect(metrics).toContain('meshhub_sync_outbox_depth 0');

    // Idle now: a status change (and its bus event) goes up without waiting for the next probe.
    const sent = messages.update(message, { status: 'delivered', at: t0 + 5_000 });
    s.ctx.bus.emit('message.updated', { message: sent, kind: 'status', previousStatus: 'queued' });
    const status = await waitFor(async () => {
      const { rows } = await bed.pool.query<{ status: string }>(
        'SELECT status FROM messages WHERE site_id = $1 AND id = $2',
        [s.siteId, message.id],
      );
      return rows[0]?.status === 'delivered' ? rows[0].status : undefined;
    });
    expect(status).toBe('delivered');
    // The upstream applied it before its answer reached the site: wait for the site's side too.
    await drained(s, upstream);
    expect(s.actor.describe()).toMatchObject({
      sync: { site_id: s.siteId, outbox_depth: 0, lag_s: 0, last_error: null, upstream: upstream.url },
    });
  });

  it('resumes after the upstream was away: nothing lost, nothing twice', async () => {
    const upstream = await bed.upstream();
    const s = await site(upstream);
    const t0 = Date.UTC(2026, 10, 21, 0, 0, 0);
    writeEach(s, readings(NODES, 120, t0));
    await start(s);
    await drained(s, upstream);

    await upstream.stop();
    writeEach(s, readings(NODES, 300, t0 + 200 * 60_000));
    s.ctx.bus.emit('reading.stored', { readings: [], source: 'http' });
    await waitFor(() => {
      const error = s.outbox.getState(SYNC_STATE.lastError);
      return error?.includes('ECONNREFUSED') ? error : undefined;
    });
    expect(s.outbox.stats().depth).toBe(300);
    writeEach(s, readings(NODES, 30, t0 + 600 * 60_000));

    await upstream.start();
    const total = await drained(s, upstream);
    expect(total).toBe(450);
    expect(await upstream.count(READINGS_SQL, s.siteId)).toBe(450);
    const { rows } = await bed.pool.query<{ n: string }>(
      'SELECT sum(records) AS n FROM sync_batches WHERE site_id = $1',
      [s.siteId],
    );
    expect(Number(rows[0]?.n)).toBe(450);
    expect((await upstream.sites.get(s.siteId))?.recordsApplied).toBe(450);
  });

  it('adopts the upstream cursor after an acknowledgement was lost: nothing applied twice', async () => {
    const upstream = await bed.upstream();
    const s = await site(upstream);
    const t0 = Date.UTC(2026, 10, 22, 0, 0, 0);
    writeEach(s, readings(NODES, 50, t0));
    // While the answer is lost, the site stores more: its retry cannot be the same batch again.
    upstream.loseNextAck(() => writeEach(s, readings(NODES, 20, t0 + 100 * 60_000)));
    await start(s);

    expect(await drained(s, upstream)).toBe(70);
    expect(await upstream.count(READINGS_SQL, s.siteId)).toBe(70);
    expect((await upstream.sites.get(s.siteId))?.recordsApplied).toBe(70);
    const metrics = await s.metricsText();
    // The probe after the failure found the cursor ahead; no batch was refused on the way.
    expect(metrics).not.toMatch(/meshhub_sync_rejects_total\{/);
    expect(metrics).toContain('meshhub_sync_records_sent_total 20');
  });

  it('syncs with a site clock hours behind; the records keep their own times', async () => {
    const upstream = await bed.upstream();
    const skew = -5 * HOUR;
    const siteNow = () => Date.now() + skew;
    const s = await site(upstream, { now: siteNow });
    const stamps = [siteNow() - 120_000, siteNow() - 60_000];
    s.readings.write(stamps.map((timestamp) => ({ nodeId: NODES[0]!, timestamp, pressurePa: 101_325 })));
    await start(s);

    await drained(s, upstream);
    const { rows } = await bed.pool.query<{ ts: string }>(
      'SELECT ts FROM readings WHERE site_id = $1 ORDER BY ts',
      [s.siteId],
    );
    expect(rows.map((r) => Number(r.ts))).toEqual(stamps);
    // The measured offset was kept for the next start.
    const offset = Number(s.outbox.getState(SYNC_STATE.clockOffsetMs));
    expect(Math.abs(offset + skew)).toBeLessThan(60_000);
  });
});
