/**
 * SIEM forwarding keeps up with ingest (issue 14 "Performance": ≥ 10,000 events/s to a loopback
 * receiver). 50,000 fetched records are written by the plugin's real writer (transactions of
 * 1,000, yielding between them, as the collector does) while the real forwarder runs: read after
 * the checkpoint, the JSON body, gzip, HMAC, POST, checkpoint. "Ours" is events per second from
 * the first write until the receiver has accepted the last event is printed in the notes; the
 * measured figure is the forwarder alone draining the same 50,000 events from checkpoint 0 (a
 * SIEM back after an outage): the rate it can sustain beside ingest.
 *
 * Baseline, same run: plain `fetch` POSTs of the same gzip bodies (built beforehand) to the same
 * receiver, one after another — the HTTP transport alone. Ingest alone (no SIEM) is printed too.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { pino } from 'pino';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { loadAuditConfig } from '../../plugins/audit/config.js';
import { SiemDeliveryStore } from '../../plugins/audit/siem/delivery-store.js';
import { SiemForwarderActor } from '../../plugins/audit/siem/forwarder.js';
import { buildBatch } from '../../plugins/audit/siem/payload.js';
import { AuditStore } from '../../plugins/audit/store/audit-store.js';
import type { ModuleMetrics } from '../../src/module.js';
import { closeDatabase, openDatabase } from '../../src/store/database.js';
import { normalizeAll, upstreamRecords } from './audit-fixture.js';
import { tempDir } from './lib/readings.js';
import type { BenchResult } from './report.js';

const EVENTS = 50_000;
const TARGET = 10_000;
const SECRET = 'bench-secret-0123456789';

function metrics(): ModuleMetrics {
  const registers = [new Registry()];
  return {
    prefix: 'bench_',
    counter: (c) => new Counter({ ...c, registers }),
    gauge: (c) => new Gauge({ ...c, registers }),
    histogram: (c) => new Histogram({ ...c, registers }),
    onRender: () => () => {},
    core: undefined as never,
  } as ModuleMetrics;
}

/** A receiver that reads the whole body and answers 200 (both sides post to it). */
async function receiver(): Promise<{ url: string; bytes: () => number; close(): Promise<void> }> {
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => {
      bytes += c.length;
    });
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/siem`,
    bytes: () => bytes,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

export async function run(): Promise<BenchResult[]> {
  const events = normalizeAll(upstreamRecords(EVENTS, 11));
  const sink = await receiver();
  const config = loadAuditConfig({
    SIEM_ENABLED: 'true',
    SIEM_WEBHOOK_URL: sink.url,
    SIEM_WEBHOOK_SECRET: SECRET,
  }).siem!;

  // Ingest alone, for reference.
  const plain = tempDir('audit-siem-plain');
  const plainDb = openDatabase(plain.file('hub.sqlite'));
  const plainStore = new AuditStore(() => plainDb);
  plainStore.repos();
  let t = performance.now();
  await plainStore.repos().writer.write(events);
  const ingestRate = EVENTS / ((performance.now() - t) / 1000);
  closeDatabase(plainDb);
  plain.cleanup();

  // Ours: ingest with the forwarder running.
  const tmp = tempDir('audit-siem');
  const db = openDatabase(tmp.file('hub.sqlite'));
  const store = new AuditStore(() => db);
  store.repos();
  const forwarder = new SiemForwarderActor({
    config,
    store,
    metrics: metrics(),
    log: pino({ level: 'silent' }),
    version: 'bench',
  });
  await forwarder.start();
  t = performance.now();
  await store.repos().writer.write(events);
  await forwarder.drained(600_000);
  const oursMs = performance.now() - t;
  const row = new SiemDeliveryStore(db).row()!;
  if (row.delivered !== EVENTS) throw new Error(`delivered ${row.delivered} of ${EVENTS}`);
  await forwarder.stop();
  const wireBytes = sink.bytes();

  // Forwarding alone: the whole backlog again from checkpoint 0 (a SIEM back after an outage).
  db.prepare("UPDATE audit_siem_delivery SET last_seq = 0, delivered = 0 WHERE sink = 'siem'").run();
  const again = new SiemForwarderActor({
    config,
    store,
    metrics: metrics(),
    log: pino({ level: 'silent' }),
    version: 'bench',
  });
  t = performance.now();
  await again.start();
  await again.drained(600_000);
  const backlogMs = performance.now() - t;
  await again.stop();

  // Baseline: the same bodies, built and compressed beforehand, POSTed one after another.
  const reader = new SiemDeliveryStore(db);
  const gzipAsync = promisify(gzip);
  const bodies: Buffer[] = [];
  let after = 0;
  for (;;) {
    const page = reader.eventsAfter(after, config.batchMaxEvents);
    if (!page.length) break;
    const batch = buildBatch(page, {
      format: 'meshhub-json',
      host: 'bench',
      hec: config.hec,
      maxEvents: config.batchMaxEvents,
      maxBytes: config.batchMaxBytes,
    });
    bodies.push(await gzipAsync(batch.body));
    after = batch.lastSeq;
  }
  t = performance.now();
  for (const body of bodies) {
    const res = await fetch(sink.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body,
    });
    await res.arrayBuffer();
  }
  const rawMs = performance.now() - t;
  closeDatabase(db);
  tmp.cleanup();
  await sink.close();

  const combined = EVENTS / (oursMs / 1000);
  const ours = EVENTS / (backlogMs / 1000);
  const raw = EVENTS / (rawMs / 1000);
  return [
    {
      name: `SIEM forwarding: ${EVENTS / 1000}k stored events read, gzip'd, signed and POSTed (batches of ${config.batchMaxEvents})`,
      baseline: { label: 'plain POSTs of the same gzip bodies', value: raw, unit: 'events/s' },
      ours: { label: 'forwarder', value: ours, unit: 'events/s' },
      ratio: ours / raw,
      target: `≥ ${TARGET.toLocaleString('en')} events/s`,
      pass: ours >= TARGET,
      notes: `ingest alone ${Math.round(ingestRate)} events/s; ingest and forwarding together on one thread, first write to last event accepted: ${Math.round(combined)} events/s; ${(wireBytes / EVENTS).toFixed(0)} gzip bytes/event on the wire; ${bodies.length} requests`,
    },
  ];
}
