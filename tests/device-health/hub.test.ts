/**
 * Device health through the whole hub over loopback: the simulator's DEVICE_METRICS (replayed
 * history and live), the radio's LocalStats and directly heard packets' SNR come out of the API,
 * announced on the bus, counted in /metrics and described in the OpenAPI document.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeviceHealthSample } from '../../src/domain/mesh.js';
import { getJson, startTestHub, type TestHub, waitFor } from '../helpers/hub.js';

let t: TestHub;
const announced: DeviceHealthSample[] = [];
const HOUR = 3_600_000;

beforeAll(async () => {
  t = await startTestHub({
    SIM_TELEMETRY_SECONDS: '2',
    SIM_BACKFILL: '6h',
    SIM_REBOOT_MINUTES: '90',
    DEVICE_HEALTH_FLUSH: '1s',
    MESSAGE_AIRTIME_PERCENT: '15',
  });
  t.hub.bus.on('test', 'device.metrics', (s) => announced.push(s));
});
afterAll(async () => {
  await t?.stop();
});

type Sample = Record<string, number | string>;

async function latest(): Promise<Sample[]> {
  return (await getJson(`${t.baseUrl}/api/v1/device-health/latest`)).body.data;
}

describe('device health with the simulator', () => {
  it('lists every simulated node’s battery, voltage and uptime, and the radio’s own LocalStats', async () => {
    const radioNum = await waitFor(
      async () => (await getJson(`${t.baseUrl}/health`)).body.radio.myNodeNum,
      10_000,
    );
    const radioId = `!${(radioNum >>> 0).toString(16).padStart(8, '0')}`;
    const data = await waitFor(
      async () => {
        const rows = await latest();
        const withBattery = rows.filter((r) => typeof r.battery_level === 'number');
        return withBattery.length >= 6 && rows.some((r) => r.node_id === radioId) ? rows : undefined;
      },
      20_000,
      'six nodes with battery and the radio’s LocalStats',
    );
    for (const row of data.filter((r) => r.node_id !== radioId)) {
      expect(row).toMatchObject({
        battery_level: expect.any(Number),
        voltage: expect.any(Number),
        uptime_seconds: expect.any(Number),
        channel_utilization: expect.any(Number),
      });
    }
    expect(data.find((r) => r.node_id === radioId)).toMatchObject({
      channel_utilization: expect.any(Number),
      air_util_tx: expect.any(Number),
      noise_floor: expect.any(Number),
      packets_rx: expect.any(Number),
    });
    expect(announced.some((s) => s.localStats !== undefined)).toBe(true);
    expect(announced.some((s) => s.batteryLevel !== undefined)).toBe(true);
  });

  it('charts a node’s history: raw samples with a reboot in them, SNR of direct packets, hourly means', async () => {
    const rows = await latest();
    const withSnr = rows.find((r) => typeof r.snr === 'number' && typeof r.battery_level === 'number');
    expect(withSnr).toBeDefined();
    const node = String(withSnr!.node_id);
    const now = Date.now();
    const range = { start: new Date(now - 7 * HOUR).toISOString(), end: new Date(now + HOUR).toISOString() };
    const url = (q: Record<string, string>) =>
      `${t.baseUrl}/api/v1/nodes/${encodeURIComponent(node)}/device-health?${new URLSearchParams(q)}`;
    // The replayed six hours arrive in time order, a 5-minute step for every node at a time.
    const raw = await waitFor(
      async () => {
        const page = await getJson(url({ ...range, limit: '10000' }));
        return page.body.data.filter((s: Sample) => s.uptime_seconds !== undefined).length > 60
          ? page
          : undefined;
      },
      20_000,
      'six hours of device metrics',
    );
    expect(raw.status).toBe(200);
    const uptimes = raw.body.data
      .map((s: Sample) => s.uptime_seconds)
      .filter((u: unknown) => u !== undefined);
    // A reboot every 90 minutes: somewhere in six hours the uptime starts again.
    expect(uptimes.some((u: number, i: number) => i > 0 && u < uptimes[i - 1])).toBe(true);
    expect(raw.body.data.some((s: Sample) => typeof s.snr === 'number')).toBe(true);
    const hourly = await getJson(url({ ...range, interval: '1h' }));
    expect(hourly.body.data.length).toBeGreaterThanOrEqual(6);
    for (const bucket of hourly.body.data) expect(bucket.timestamp).toMatch(/T\d\d:00:00\.000Z$/);
  });

  it('answers a bad node id with a 400 problem over HTTP', async () => {
    const res = await fetch(
      `${t.baseUrl}/api/v1/nodes/nobody/device-health?start=2025-01-01T00:00:00Z&end=2025-01-02T00:00:00Z`,
    );
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    const body = (await res.json()) as { errors: { field: string }[] };
    expect(body.errors[0]!.field).toBe('node_id');
  });

  it('shows the hub’s airtime against its budget with the radio’s own channel use', async () => {
    const res = await getJson(`${t.baseUrl}/api/v1/radio/airtime`);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      budget_percent: 15,
      window_seconds: 3600,
      used_percent: 0,
      sent_packets: 0,
      radio: { channel_utilization: expect.any(Number), air_util_tx: expect.any(Number) },
    });
  });

  it('counts samples in /metrics and describes its routes in the OpenAPI document', async () => {
    const metrics = await (await fetch(`${t.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/meshhub_device_health_samples_total\{kind="device"\} [1-9]/);
    expect(metrics).toMatch(/meshhub_device_health_samples_total\{kind="local_stats"\} [1-9]/);
    const doc = await getJson(`${t.baseUrl}/api/v1/openapi.json`);
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining([
        '/api/v1/nodes/{node_id}/device-health',
        '/api/v1/device-health/latest',
        '/api/v1/radio/airtime',
      ]),
    );
  });
});

describe('DEVICE_HEALTH=false', () => {
  it('decodes and stores nothing, while the rest of the hub hears the same simulated nodes', async () => {
    const off = await startTestHub({
      SIM_TELEMETRY_SECONDS: '2',
      SIM_BACKFILL: '1h',
      DEVICE_HEALTH: 'false',
    });
    try {
      const heard: DeviceHealthSample[] = [];
      off.hub.bus.on('test', 'device.metrics', (s) => heard.push(s));
      await waitFor(
        async () => {
          const { data } = (await getJson(`${off.baseUrl}/api/v1/weather/latest`)).body as {
            data: unknown[];
          };
          return data.length >= 6 ? true : undefined;
        },
        20_000,
        'the simulated nodes’ readings',
      );
      expect((await getJson(`${off.baseUrl}/api/v1/device-health/latest`)).body.data).toEqual([]);
      expect(heard).toEqual([]);
    } finally {
      await off.stop();
    }
  });
});
