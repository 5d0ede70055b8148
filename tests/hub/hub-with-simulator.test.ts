/**
 * The whole hub against the simulator over loopback TCP: radio packets become readings in
 * SQLite and come back out of the weather API, the node table fills, health and metrics tell.
 */

import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Reading } from '../../src/domain/reading.js';
import { getJson, startTestHub, type TestHub, waitFor } from '../helpers/hub.js';

const SIM_ENV = { SIM_TELEMETRY_SECONDS: '2', SIM_BACKFILL: '6h' };
let t: TestHub;

beforeAll(async () => {
  t = await startTestHub(SIM_ENV);
});
afterAll(async () => {
  await t?.stop();
});

/** Every reading handed to the writer, before it is committed. */
function recordCommits(hub: TestHub['hub']): Reading[] {
  const received: Reading[] = [];
  const bus = hub.bus;
  const ask = bus.ask.bind(bus);
  bus.ask = ((name, request, options) => {
    if (name === 'readings.commit') received.push(...(request as { readings: Reading[] }).readings);
    return ask(name, request, options);
  }) as typeof bus.ask;
  return received;
}

/** /weather/latest once at least three nodes have a temperature. */
function latestWithTemperature() {
  return waitFor(
    async () => {
      const r = await getJson(`${t.baseUrl}/api/v1/weather/latest`);
      const withTemp = r.body.data.filter(
        (x: { temperature_c?: unknown }) => typeof x.temperature_c === 'number',
      );
      return withTemp.length >= 3 ? r : undefined;
    },
    15_000,
    'three nodes with temperature',
  );
}

describe('hub with the simulator over TCP', () => {
  it('connects to the simulated radio and says so in /health', async () => {
    const health = await waitFor(
      async () => {
        const h = await getJson(`${t.baseUrl}/health`);
        return h.body.radio.state === 'connected' ? h : undefined;
      },
      10_000,
      'radio connected',
    );
    expect(health.status).toBe(200);
    expect(health.body.status).toBe('ok');
    expect(health.body.radio).toMatchObject({ state: 'connected', transport: 'tcp', simulated: true });
    expect(health.body.radio.myNodeNum).toEqual(expect.any(Number));
    const names = health.body.actors.map((a: { name: string }) => a.name);
    expect(names).toEqual(expect.arrayContaining(['store', 'ingest-writer', 'simulator', 'radio', 'http']));
    expect(health.body.actors.every((a: { state: string }) => a.state === 'running')).toBe(true);
  });

  it('serves the latest readings of at least 3 nodes with numeric temperature', async () => {
    const latest = await latestWithTemperature();
    expect(latest.headers.get('content-type')).toMatch(/^application\/json/);
    const ids = latest.body.data.map((r: { node_id: string }) => r.node_id);
    expect(ids).toEqual([...ids].sort());
    for (const r of latest.body.data) {
      expect(r.node_id).toMatch(/^![0-9a-f]{8}$/);
      expect(r.timestamp).toMatch(/Z$/);
    }
  });

  it('returns hourly buckets from the replayed history', async () => {
    const latest = await latestWithTemperature();
    const node = latest.body.data.find(
      (x: { temperature_c?: unknown }) => typeof x.temperature_c === 'number',
    );
    const end = new Date().toISOString();
    const start = new Date(Date.now() - 6 * 3_600_000).toISOString();
    const url = `${t.baseUrl}/api/v1/weather/history?node_id=${encodeURIComponent(node.node_id)}&start=${start}&end=${end}&interval=1h`;
    const history = await getJson(url);
    expect(history.status).toBe(200);
    expect(history.body.data.length).toBeGreaterThanOrEqual(5);
    for (const bucket of history.body.data) {
      expect(new Date(bucket.timestamp).getTime() % 3_600_000).toBe(0);
      expect(typeof bucket.temperature_c).toBe('number');
    }
  });

  it('lists the simulated nodes with names, and positions for those that have one', async () => {
    const nodes = await waitFor(
      async () => {
        const r = await getJson(`${t.baseUrl}/api/v1/nodes`);
        return r.body.data.length >= 6 ? r : undefined;
      },
      10_000,
      'six nodes',
    );
    const withPosition = nodes.body.data.filter((n: { latitude?: number }) => typeof n.latitude === 'number');
    expect(withPosition.length).toBeGreaterThanOrEqual(4);
    expect(withPosition.length).toBeLessThan(nodes.body.data.length);
    for (const n of nodes.body.data) expect(typeof n.long_name).toBe('string');
  });

  it('counts readings and packets in /metrics', async () => {
    await latestWithTemperature();
    const res = await fetch(`${t.baseUrl}/metrics`);
    const text = await res.text();
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(text).toMatch(/meshhub_readings_ingested_total\{source="radio"\} [1-9]/);
    expect(text).toMatch(/meshhub_mesh_packets_total\{port="TELEMETRY_APP",via="radio"\} [1-9]/);
    expect(text).toMatch(/meshhub_mailbox_depth\{actor="ingest-writer",mailbox="readings"\} \d+/);
    expect(text).toContain('meshhub_http_request_duration_seconds_bucket');
    expect(text).toMatch(/meshhub_radio_connected 1/);
  });

  it('echoes a sane x-request-id and generates one otherwise', async () => {
    const mine = await fetch(`${t.baseUrl}/api/version`, { headers: { 'x-request-id': 'abc-123' } });
    expect(mine.headers.get('x-request-id')).toBe('abc-123');
    expect(await mine.json()).toEqual({ version: t.hub.version });
    const generated = await fetch(`${t.baseUrl}/api/v1/nope`, {
      headers: { 'x-request-id': 'bad id\twith tab' },
    });
    expect(generated.status).toBe(404);
    const id = generated.headers.get('x-request-id');
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const problem = await generated.json();
    expect(problem).toMatchObject({ status: 404, request_id: id });
  });

  it('commits every received reading by the time it has stopped', async () => {
    // A hub of its own: stopping the shared one would take it from the other tests.
    const own = await startTestHub(SIM_ENV);
    try {
      const received = recordCommits(own.hub);
      await waitFor(() => (received.length > 10 ? true : undefined), 10_000, 'live readings');
      await own.hub.stop();
      const db = new Database(join(own.dataDir, 'meshhub.sqlite'), { readonly: true });
      const has = db.prepare('SELECT 1 FROM readings WHERE node_id = ? AND ts = ?');
      const missing = received.filter((r) => !has.get(r.nodeId, r.timestamp));
      db.close();
      expect(received.length).toBeGreaterThan(10);
      expect(missing).toEqual([]);
    } finally {
      await own.stop();
    }
  });
});
