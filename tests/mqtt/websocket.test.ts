/**
 * MQTT over WebSocket on the HTTP port at /mqtt (MQTT_WEBSOCKET=true): the same broker, the same
 * auth and ingestion; other upgrade paths are refused, and a hub stops with WebSocket clients on.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { connect, endClients, latestOf, type MqttTestHub, startMqttHub } from './helpers.js';

const hubs: MqttTestHub[] = [];
afterEach(async () => {
  await endClients();
  await Promise.all(hubs.splice(0).map((h) => h.stop()));
});

async function hub(env: Record<string, string>): Promise<MqttTestHub> {
  const h = await startMqttHub({ MQTT_ALLOW_ANONYMOUS: 'true', ...env });
  hubs.push(h);
  return h;
}

describe('MQTT over WebSocket', () => {
  it('ingests a reading published over ws://…/mqtt', async () => {
    const t = await hub({ MQTT_WEBSOCKET: 'true' });
    const client = await connect(`ws://127.0.0.1:${t.hub.http.port}/mqtt`);
    await client.publishAsync(
      'meshhub/ingest/readings',
      JSON.stringify({ node_id: 'ws-sensor', temperature_c: 7.5 }),
      {
        qos: 1,
      },
    );
    expect(await latestOf(t.baseUrl, 'ws-sensor')).toMatchObject({ temperature_c: 7.5 });
    // HTTP keeps working on the same port.
    expect((await fetch(`${t.baseUrl}/health`)).status).toBe(200);
  });

  it('refuses WebSocket upgrades elsewhere, and at /mqtt when MQTT_WEBSOCKET is off', async () => {
    const on = await hub({ MQTT_WEBSOCKET: 'true' });
    await expect(
      connect(`ws://127.0.0.1:${on.hub.http.port}/elsewhere`, { connectTimeout: 2_000 }),
    ).rejects.toThrow();
    const off = await hub({});
    await expect(
      connect(`ws://127.0.0.1:${off.hub.http.port}/mqtt`, { connectTimeout: 2_000 }),
    ).rejects.toThrow();
  });

  it('stops the hub with a WebSocket client connected, and disconnects it', async () => {
    const t = await hub({ MQTT_WEBSOCKET: 'true' });
    const client = await connect(`ws://127.0.0.1:${t.hub.http.port}/mqtt`);
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    await t.stop();
    await closed;
    const health = t.hub.supervisor.status().find((a) => a.name === 'mqtt');
    expect(health?.state).toBe('stopped');
  });
});
