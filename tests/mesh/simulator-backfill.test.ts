/**
 * The simulator's 24 h backfill through the real hub: every telemetry kind of a node arrives,
 * including the air-quality node's particle counts sent in the same second as its temperature
 * (each packet has its own id, so the hub's dedupe on (from, id) keeps both).
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getJson, startTestHub, type TestHub, waitFor } from '../helpers/hub.js';

let t: TestHub;

beforeAll(async () => {
  // Live telemetry once a day: what the history shows comes from the backfill.
  t = await startTestHub({ SIM_TELEMETRY_SECONDS: '86400', SIM_BACKFILL: '24h' });
});
afterAll(async () => {
  await t?.stop();
});

describe('simulator backfill at the hub', () => {
  it('gives the air-quality node PM values and temperatures over the last 24 h', async () => {
    const node = await waitFor(
      async () => {
        const r = await getJson(`${t.baseUrl}/api/v1/nodes`);
        return r.body.data.find((n: { long_name?: string }) => n.long_name?.includes('Air Quality'));
      },
      15_000,
      'the air-quality node',
    );
    const end = new Date().toISOString();
    const start = new Date(Date.now() - 24 * 3_600_000).toISOString();
    const url = `${t.baseUrl}/api/v1/weather/history?node_id=${encodeURIComponent(node.node_id)}&start=${start}&end=${end}&interval=1h`;
    const history = await waitFor(
      async () => {
        const r = await getJson(url);
        return r.body.data?.length >= 20 ? r : undefined;
      },
      30_000,
      'a day of hourly buckets',
    );
    const buckets = history.body.data as Array<Record<string, unknown>>;
    const withPm = buckets.filter((b) => typeof b.pm25_ugm3 === 'number' && typeof b.pm10_ugm3 === 'number');
    const withTemperature = buckets.filter((b) => typeof b.temperature_c === 'number');
    expect(withTemperature.length).toBeGreaterThanOrEqual(20);
    expect(withPm.length).toBe(withTemperature.length);
  });
});
