/**
 * Issue 17: SIGKILL during MQTT QoS 1 ingest, with the built hub as a child process.
 *
 * A sensor fleet publishes single readings at QoS 1 with up to 64 in flight on one connection
 * (each with its own node and timestamp, so a resend is the same reading); the test records,
 * client-side, every reading whose PUBACK arrived. A seeded script SIGKILLs the hub at a random
 * moment of the stream, ROUNDS times, and starts it again. After every kill, every reading
 * acknowledged so far must be stored (a PUBACK goes out only after the commit: README
 * "Durability"). Like a real QoS 1 client, the sensors send the unacknowledged ones again after
 * the restart. At the end: exactly the readings published are stored, each once (the raw rows
 * counted per node and timestamp), and the hourly rollups agree with the raw rows (a batch
 * counted twice in the rollups would shift a bucket's mean).
 */
import { connectAsync, type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/hub.js';
import { HubProcess, killScenario, pause, QUIET_SIM, removeDir, scratchDir } from './helpers/hub-process.js';

const { seed: SEED, rounds: ROUNDS, between } = killScenario('kill during MQTT ingest');
const NODES = 8;
const IN_FLIGHT = 64;
/**
 * New readings per millisecond at most (5,000/s): enough that every kill lands among publishes
 * in flight, and a bounded total (about 100,000) on any machine, so the checks stay cheap.
 */
const NEW_PER_MS = 5;
const HOUR = 3_600_000;
/** Readings lie in the past two days, one second apart per node, on whole hours from here. */
const BASE = Math.floor((Date.now() - 2 * 24 * HOUR) / HOUR) * HOUR;

interface Reading {
  node_id: string;
  timestamp: string;
  temperature_c: number;
}

function reading(i: number): Reading {
  return {
    node_id: `rel-${i % NODES}`,
    timestamp: new Date(BASE + Math.floor(i / NODES) * 1000).toISOString(),
    // Varied values, so a reading counted twice in a rollup moves the bucket's mean.
    temperature_c: ((i * 7919) % 1500) / 10 - 50,
  };
}

const dataDir = scratchDir('ingest');
const hub = new HubProcess({
  dataDir,
  name: 'hub',
  env: {
    ...QUIET_SIM,
    MQTT_ALLOW_ANONYMOUS: 'true',
  },
});

/** Indexes published at least once; indexes whose PUBACK arrived. */
let next = 0;
const acked = new Set<number>();
const resend: number[] = [];

/**
 * Publishes until the connection drops (the kill): resends first, then new readings, at most
 * IN_FLIGHT unacknowledged at a time.
 */
async function publishUntilClosed(client: MqttClient): Promise<void> {
  let inFlight = 0;
  let closed = false;
  const outstanding = new Set<number>();
  const startedAt = Date.now();
  let sentNew = 0;
  let paced: NodeJS.Timeout | undefined;
  await new Promise<void>((resolve) => {
    const done = () => {
      if (closed) return;
      closed = true;
      clearTimeout(paced);
      // What was in flight when the hub died: unknown, so sent again next round.
      for (const i of outstanding) resend.push(i);
      resolve();
    };
    client.on('close', done);
    client.on('error', done);
    const pump = () => {
      while (!closed && inFlight < IN_FLIGHT) {
        if (resend.length === 0 && sentNew >= (Date.now() - startedAt) * NEW_PER_MS) {
          paced ??= setTimeout(() => {
            paced = undefined;
            pump();
          }, 2);
          return;
        }
        if (resend.length === 0) sentNew++;
        const i = resend.length > 0 ? resend.shift()! : next++;
        inFlight++;
        outstanding.add(i);
        client.publish('meshhub/ingest/readings', JSON.stringify(reading(i)), { qos: 1 }, (error) => {
          if (closed) return;
          inFlight--;
          outstanding.delete(i);
          if (error) resend.push(i);
          else acked.add(i);
          pump();
        });
      }
    };
    pump();
  });
}

/** Connections that ended in an error before or while connecting (printed with the counts). */
const connectErrors: string[] = [];

/**
 * A sensor's connection. A sensor whose connection fails tries again, as a real one does: once
 * (CI, 13:20), a connection made right after a restart failed in the client's parser ("Invalid
 * header flag bits … puback"), not reproduced since; it is counted and printed, never hidden.
 */
async function connectSensor(): Promise<MqttClient> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await connectAsync(`mqtt://127.0.0.1:${hub.mqttPort}`, {
        clientId: `rel-sensor-${hub.starts}-${attempt}`,
        reconnectPeriod: 0,
        connectTimeout: 5_000,
        clean: true,
      });
    } catch (error) {
      connectErrors.push((error as Error).message);
      if (attempt >= 3) throw error;
      await pause(200);
    }
  }
}

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies of the history API
async function history(node: string, interval: 'raw' | '1h', window?: [number, number]): Promise<any[]> {
  const start = new Date(window?.[0] ?? BASE).toISOString();
  const end = new Date(window?.[1] ?? BASE + 3 * 24 * HOUR).toISOString();
  const rows: never[] = [];
  let url: string | undefined =
    `${hub.baseUrl}/api/v1/weather/history?node_id=${node}&start=${start}&end=${end}&interval=${interval}&limit=10000`;
  while (url) {
    const res = await fetch(url);
    expect(res.status).toBe(200);
    rows.push(...((await res.json()) as { data: never[] }).data);
    // Link: <…>; rel="next" (README "/weather/history: paging")
    const next = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
    url = next ? new URL(next, hub.baseUrl).toString() : undefined;
  }
  return rows;
}

/** Stored readings of the fleet (those around `indexes`, or all), as "node@timestamp" → count. */
async function stored(indexes?: number[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  if (indexes?.length === 0) return counts;
  const times = indexes?.map((i) => Date.parse(reading(i).timestamp));
  const window: [number, number] | undefined = times && [Math.min(...times), Math.max(...times) + 1000];
  for (let n = 0; n < NODES; n++) {
    for (const r of await history(`rel-${n}`, 'raw', window)) {
      const key = `${r.node_id}@${r.timestamp}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  }
  return counts;
}

const keyOf = (i: number) => {
  const r = reading(i);
  return `${r.node_id}@${r.timestamp}`;
};

beforeAll(async () => {
  await hub.start();
});

afterAll(async () => {
  await hub.kill();
  removeDir(dataDir);
});

describe('SIGKILL during MQTT QoS 1 ingest (the built hub as a child process)', () => {
  it(`stores every acknowledged reading exactly once (seed ${SEED}, ${ROUNDS} kills)`, async () => {
    const script: string[] = [];
    const restarts: number[] = [];
    const checked = new Set<number>();
    for (let round = 0; round < ROUNDS; round++) {
      const client = await connectSensor();
      const publishing = publishUntilClosed(client);
      const killAfter = between(50, 1_500);
      await pause(killAfter);
      const ackedBefore = acked.size;
      await hub.kill();
      await publishing;
      client.end(true);
      script.push(`${killAfter}ms/${ackedBefore}`);
      restarts.push(await hub.start());
      // Nothing acknowledged is lost, at any kill: what this round acknowledged is read back
      // (by its time window); everything acknowledged is read back at the end.
      const thisRound = [...acked].filter((i) => !checked.has(i));
      const now = await stored(thisRound);
      const missing = thisRound.filter((i) => !now.has(keyOf(i)));
      expect(missing, `round ${round}: acknowledged but not stored after the kill`).toEqual([]);
      for (const i of thisRound) checked.add(i);
    }
    // The last round: the sensor sends what is still unacknowledged, and the hub stays up.
    for (let attempt = 1; resend.length > 0; attempt++) {
      const client = await connectSensor();
      const last = resend.splice(0);
      const failed: number[] = [];
      await Promise.all(
        last.map((i) =>
          client.publishAsync('meshhub/ingest/readings', JSON.stringify(reading(i)), { qos: 1 }).then(
            () => acked.add(i),
            () => failed.push(i),
          ),
        ),
      );
      await client.endAsync(true).catch(() => {});
      resend.push(...failed);
      if (failed.length > 0) connectErrors.push(`${failed.length} publishes of the last round failed`);
      if (attempt >= 3) expect(resend, 'the last round could not deliver').toEqual([]);
    }

    console.log(
      `[reliability] kill during MQTT ingest: ${ROUNDS} kills at ${script.join(', ')} (ms after connect / acked so far); ` +
        `${next} readings published, ${acked.size} acknowledged; restart to healthy ${Math.min(...restarts)}–${Math.max(...restarts)} ms; ` +
        `connections that failed and were made again: ${connectErrors.length}${connectErrors.length ? ` (${connectErrors.join('; ')})` : ''}`,
    );

    // Exact counts: every reading published is acknowledged and stored, each exactly once.
    expect(acked.size).toBe(next);
    const final = await waitFor(
      async () => {
        const s = await stored();
        return s.size === next ? s : undefined;
      },
      10_000,
      'every reading stored',
    );
    const twice = [...final].filter(([, count]) => count !== 1);
    expect(twice).toEqual([]);
    expect(final.size).toBe(next);
    for (let i = 0; i < next; i++) expect(final.has(keyOf(i))).toBe(true);

    // The hourly rollups agree with the raw rows: the mean of each hour, recomputed.
    for (let n = 0; n < NODES; n++) {
      const raw = await history(`rel-${n}`, 'raw');
      const byHour = new Map<number, { sum: number; count: number }>();
      for (const r of raw) {
        const hour = Math.floor(Date.parse(r.timestamp) / HOUR) * HOUR;
        const b = byHour.get(hour) ?? { sum: 0, count: 0 };
        b.sum += r.temperature_c;
        b.count++;
        byHour.set(hour, b);
      }
      const buckets = await history(`rel-${n}`, '1h');
      expect(buckets.length).toBe(byHour.size);
      for (const bucket of buckets) {
        const b = byHour.get(Date.parse(bucket.timestamp))!;
        expect(bucket.temperature_c).toBeCloseTo(b.sum / b.count, 6);
      }
    }
  }, 600_000);
});
