/**
 * Device health on MQTT, as an integration subscribed to the hub sees it: each node's newest
 * values retained on `meshhub/device-health/<node_id>`, the same JSON as
 * `/api/v1/device-health/latest`; a renumbered node's old topic cleared and its new one published.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HubUserService } from '../../src/auth/user-service.js';
import { getJson, mqttOf, startTestHub, type TestHub, waitFor } from '../helpers/hub.js';
import { collect, connect, endClients, grantedQos } from '../mqtt/helpers.js';

let t: TestHub;
const PASSWORD = 'integration-secret-42';

beforeAll(async () => {
  t = await startTestHub({ SIM_TELEMETRY_SECONDS: '2', DEVICE_HEALTH_FLUSH: '1s' });
  await new HubUserService(t.hub.store.db).add({
    username: 'ha',
    password: PASSWORD,
    roles: ['integration'],
  });
  await new HubUserService(t.hub.store.db).add({ username: 'sensor', password: PASSWORD, roles: ['device'] });
});
afterAll(async () => {
  await endClients();
  await t?.stop();
});

const url = () => `mqtt://127.0.0.1:${mqttOf(t.hub).port}`;
type Health = Record<string, number | string>;

describe('device health on MQTT', () => {
  it('keeps each node’s newest values retained, as /api/v1/device-health/latest lists them', async () => {
    const client = await connect(url(), { username: 'ha', password: PASSWORD });
    const feed = collect(client, 'meshhub/device-health/+');
    await feed.ready;
    const batteries = await waitFor(
      () => {
        const nodes = new Set(
          feed.messages.filter((m) => m.payload.includes('"battery_level"')).map((m) => m.topic),
        );
        return nodes.size >= 3 ? [...nodes] : undefined;
      },
      20_000,
      'three nodes’ battery on MQTT',
    );
    const topic = batteries[0]!;
    const nodeId = topic.split('/')[2]!;
    const last = (): Health =>
      JSON.parse(feed.messages.filter((m) => m.topic === topic).at(-1)!.payload) as Health;
    // Between two reports the newest message and the API agree field for field.
    const agreed = await waitFor(
      async () => {
        const before = last();
        const api = (await getJson(`${t.baseUrl}/api/v1/device-health/latest`)).body.data.find(
          (r: Health) => r.node_id === nodeId,
        );
        return JSON.stringify(api) === JSON.stringify(before) &&
          JSON.stringify(last()) === JSON.stringify(before)
          ? api
          : undefined;
      },
      10_000,
      'the API and the topic to agree',
    );
    expect(agreed).toMatchObject({
      node_id: nodeId,
      battery_level: expect.any(Number),
      voltage: expect.any(Number),
    });

    // Subscribed later: the state arrives retained.
    const later = collect(await connect(url(), { username: 'ha', password: PASSWORD }), topic);
    await later.ready;
    const retained = await waitFor(() => later.messages[0], 10_000, 'the retained state');
    expect(retained.retain).toBe(true);
    expect(JSON.parse(retained.payload)).toMatchObject({ node_id: nodeId });
  });

  it('a device may not subscribe there, and a client publishing there is disconnected', async () => {
    const device = await connect(url(), { username: 'sensor', password: PASSWORD });
    expect(await grantedQos(device, ['meshhub/device-health/#'])).toEqual([0x80]);
    const ha = await connect(url(), { username: 'ha', password: PASSWORD });
    const closed = new Promise<void>((resolve) => ha.once('close', () => resolve()));
    ha.publish('meshhub/device-health/!deadbeef', '{"battery_level":1}');
    await closed;
    const rows = (await getJson(`${t.baseUrl}/api/v1/device-health/latest`)).body.data as Health[];
    expect(rows.find((r) => r.node_id === '!deadbeef')).toBeUndefined();
  });

  it('moves a renumbered node’s retained state to its new id and clears the old topic', async () => {
    const rows = (await getJson(`${t.baseUrl}/api/v1/device-health/latest`)).body.data as Health[];
    const old = rows.find((r) => typeof r.battery_level === 'number')!.node_id as string;
    const newId = '!0badc0de';
    const client = await connect(url(), { username: 'ha', password: PASSWORD });
    const feed = collect(client, 'meshhub/device-health/+');
    await feed.ready;
    await waitFor(() => feed.messages.find((m) => m.topic.endsWith(old)), 10_000, 'the old retained state');
    t.hub.bus.emit('node.renumbered', { oldNodeId: old, newNodeId: newId, at: Date.now() });
    const cleared = await waitFor(
      () => feed.messages.find((m) => m.topic === `meshhub/device-health/${old}` && m.payload === ''),
      10_000,
      'the old topic cleared',
    );
    expect(cleared).toBeDefined();
    const moved = await waitFor(
      () => feed.messages.find((m) => m.topic === `meshhub/device-health/${newId}`),
      10_000,
      'the new topic',
    );
    expect(JSON.parse(moved.payload)).toMatchObject({ node_id: newId, battery_level: expect.any(Number) });
  });
});
