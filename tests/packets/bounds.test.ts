/**
 * The packet log's bounds: a flood far past PACKET_LOG_MAX_ROWS never leaves more than the cap
 * plus one batch in the table, rows older than PACKET_LOG_DAYS go, and sightings are written in
 * batches, never a transaction each.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { HubBus, HubEvents, HubRequests } from '../../src/domain/events.js';
import { Bus } from '../../src/kernel/bus.js';
import { PACKET_LOG_BATCH_ROWS, PacketLogWriter } from '../../src/packets/packet-log-writer.js';
import { closeDatabase, type Database } from '../../src/store/database.js';
import { DAY, memoryDb, T0 } from '../store/fixtures.js';
import { heardPacket } from './fixtures.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
let db: Database;
let bus: HubBus;
let now: number;
let counts: { written: number; trimmed: number; commits: number };

function writer(maxRows: number, days = 7): PacketLogWriter {
  return new PacketLogWriter({
    bus,
    db,
    log: silent,
    bounds: { maxRows, maxAgeMs: days * DAY },
    counters: {
      written: (n) => {
        counts.written += n;
        counts.commits++;
      },
      trimmed: (n) => {
        counts.trimmed += n;
      },
    },
    now: () => now,
  });
}

function rowCount(): number {
  return (db.prepare('SELECT count(*) AS n FROM packet_log').get() as { n: number }).n;
}

function hear(n: number, firstId: number): void {
  for (let i = 0; i < n; i++) {
    bus.emit('mesh.heard', { packet: heardPacket(firstId + i), via: 'mqtt', duplicate: false });
  }
}

beforeEach(() => {
  db = memoryDb();
  bus = new Bus<HubEvents, HubRequests>();
  now = T0;
  counts = { written: 0, trimmed: 0, commits: 0 };
});
afterEach(() => closeDatabase(db));

describe('packet log bounds', () => {
  it('holds at most the row cap plus one batch through a flood, keeping the newest', async () => {
    const log = writer(100);
    await log.start();
    let id = 1;
    let most = 0;
    for (let round = 0; round < 40; round++) {
      hear(250, id);
      id += 250;
      // Let the batches be handed over as they would be on a busy hub.
      await new Promise((r) => setImmediate(r));
      most = Math.max(most, rowCount());
    }
    await log.stop();
    most = Math.max(most, rowCount());
    expect(counts.written).toBe(10_000);
    expect(most).toBeLessThanOrEqual(100 + PACKET_LOG_BATCH_ROWS);
    expect(rowCount()).toBe(100);
    expect(counts.trimmed).toBe(10_000 - 100);
    const ids = db.prepare('SELECT packet_id FROM packet_log ORDER BY id').pluck().all() as number[];
    expect(ids[0]).toBe(10_000 - 99);
    expect(ids.at(-1)).toBe(10_000);
    // Batches, not a transaction per packet.
    expect(counts.commits).toBeLessThan(10_000 / 50);
  });

  it('trims the rows older than PACKET_LOG_DAYS and keeps the younger ones', async () => {
    const log = writer(100_000, 2);
    await log.start();
    hear(30, 1);
    await log.flush();
    now += DAY;
    hear(20, 100);
    await log.flush();
    expect(rowCount()).toBe(50);
    // Two days and a bit after the first rows: they go, the day-old ones stay.
    now += DAY + 60_000;
    hear(1, 500);
    await log.flush();
    expect(rowCount()).toBe(21);
    expect(counts.trimmed).toBe(30);
    await log.stop();
  });

  it('starts again on a log that was already full: the bound still holds', async () => {
    let log = writer(100);
    await log.start();
    hear(300, 1);
    await log.stop();
    log = writer(100);
    await log.start();
    hear(300, 1_000);
    await log.stop();
    expect(rowCount()).toBe(100);
  });
});
