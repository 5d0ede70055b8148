/**
 * Issue 17, "Edge fitness", measured from outside:
 *
 * - `idle-rss`: the hub started the way a newcomer starts it (`node scripts/start.mjs start`, what
 *   `npm start` runs) on the simulator (RADIO=sim, 24 h of history replayed), idle 60 s after the
 *   radio connected, against a bare process that has loaded and started better-sqlite3, Hono and
 *   Aedes, idle as long, both running at the same time. Target ≤ 1.4×.
 * - `load-rss`: the same hub with MQTT open; a year of 5-minute history for one node (arrays of
 *   500 readings) and 1,000 nodes × 20 single-reading publishes (100 in flight) through MQTT QoS 1,
 *   then a year of `interval=1h` and `1d` history read once; RSS 60 s after the load ended,
 *   against the same bare baseline. Target ≤ 1.6×.
 *
 * EDGE_RSS_IDLE_MS changes the 60 s (for trying things out; figures are taken at 60 s).
 */

import { historyQuery } from './lib/http.js';
import {
  freePort,
  type HubProc,
  rssMb,
  settledRss,
  startBare,
  startHub,
  tempData,
} from './lib/hub-process.js';
import { publishAll, READINGS_TOPIC as TOPIC } from './lib/mqtt-publish.js';
import { readingApiJson, sensorValues } from './lib/readings.js';
import { type BenchResult, compare } from './report.js';

const IDLE_MS = Number(process.env.EDGE_RSS_IDLE_MS ?? 60_000);
const YEAR_START = Date.UTC(2025, 0, 1);
const STEP = 5 * 60_000;

function reading(node: string, ts: number, i: number): Record<string, unknown> {
  return readingApiJson({ nodeId: node, timestamp: ts, ...sensorValues(i) });
}

async function load(hub: HubProc, mqttPort: number): Promise<void> {
  const { connectAsync } = await import('mqtt');
  const client = await connectAsync(`mqtt://127.0.0.1:${mqttPort}`, { reconnectPeriod: 0 });
  try {
    const history: string[] = [];
    let batch: unknown[] = [];
    let i = 0;
    const end = YEAR_START + 366 * 86_400_000;
    for (let ts = YEAR_START; ts < end; ts += STEP) {
      batch.push(reading('!0a0b0c0d', ts, i++));
      if (batch.length === 500) {
        history.push(JSON.stringify(batch));
        batch = [];
      }
    }
    if (batch.length) history.push(JSON.stringify(batch));
    await publishAll(client, TOPIC, history, 4);
    const live: string[] = [];
    const now = Date.now() - 20 * 60_000;
    for (let k = 0; k < 20_000; k++) {
      live.push(JSON.stringify(reading(`n-${k % 1000}`, now + Math.floor(k / 1000) * 60_000, k)));
    }
    await publishAll(client, TOPIC, live, 100);
  } finally {
    await client.endAsync();
  }
  for (const interval of ['1h', '1d']) {
    const q = historyQuery('!0a0b0c0d', YEAR_START, YEAR_START + 366 * 86_400_000, interval);
    const res = await fetch(`${hub.url}/api/v1/weather/history?${q}`);
    if (res.status !== 200) throw new Error(`history answered ${res.status}`);
    await res.arrayBuffer();
  }
}

async function measure(kind: 'idle' | 'load'): Promise<{ bare: number; hub: number; peak?: number }> {
  const data = tempData(`edge-rss-${kind}`);
  const bare = await startBare(data.dir);
  let hub: HubProc | undefined;
  try {
    const mqttPort = await freePort();
    hub = await startHub({
      how: 'npm',
      dataDir: data.dir,
      env: {
        RADIO: 'sim',
        SIM_PORT: '0',
        MQTT_PORT: String(mqttPort),
        MQTT_ALLOW_ANONYMOUS: 'true',
        LOG_LEVEL: 'info',
      },
      until: (h) => (h.radio as { state?: string } | undefined)?.state === 'connected',
    });
    let peak: number | undefined;
    if (kind === 'load') {
      await load(hub, mqttPort);
      peak = rssMb(hub.pid);
    }
    const [bareRss, hubRss] = await Promise.all([
      settledRss(bare.pid, IDLE_MS),
      settledRss(hub.pid, IDLE_MS),
    ]);
    return { bare: bareRss, hub: hubRss, ...(peak === undefined ? {} : { peak }) };
  } finally {
    await hub?.stop();
    await bare.stop();
    data.cleanup();
  }
}

export async function runIdle(): Promise<BenchResult[]> {
  const m = await measure('idle');
  return [
    compare(
      `idle RSS, npm start on the simulator, idle ${IDLE_MS / 1000} s`,
      { label: 'bare node: better-sqlite3 + Hono + Aedes started', value: m.bare, unit: 'MB' },
      { label: 'npm start (RADIO=sim)', value: m.hub, unit: 'MB' },
      { atMost: 1.4, text: '≤ 1.4 × bare' },
    ),
  ];
}

export async function runLoad(): Promise<BenchResult[]> {
  const m = await measure('load');
  return [
    compare(
      `RSS ${IDLE_MS / 1000} s after a year of 5-min history + 1,000 nodes through MQTT`,
      { label: 'bare node: better-sqlite3 + Hono + Aedes started', value: m.bare, unit: 'MB' },
      { label: 'npm start (RADIO=sim), after the load', value: m.hub, unit: 'MB' },
      { atMost: 1.6, text: '≤ 1.6 × bare' },
      `RSS when the load ended: ${m.peak?.toFixed(1)} MB`,
    ),
  ];
}

export const run = runIdle;
