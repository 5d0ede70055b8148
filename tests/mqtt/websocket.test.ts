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

/** The HTTP status a WebSocket handshake is refused with (101 would be an upgrade). */
async function upgradeStatus(url: string): Promise<number> {
  const { WebSocket } = await import('ws');
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, 'mqtt');
    ws.once('unexpected-response', (_request, response) => {
      resolve(response.statusCode ?? 0);
      ws.terminate();
    });
    ws.once('open', () => {
      ws.close();
      resolve(101);
    });
    ws.once('error', (error) => reject(error));
  });
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

  it('answers WebSocket upgrades elsewhere, and at /mqtt when MQTT_WEBSOCKET is off, with 404', async () => {
    const on = await hub({ MQTT_WEBSOCKET: 'true' });
    expect(await upgradeStatus(`ws://127.0.0.1:${on.hub.http.port}/elsewhere`)).toBe(404);
    const off = await hub({});
    expect(await upgradeStatus(`ws://127.0.0.1:${off.hub.http.port}/mqtt`)).toBe(404);
    // The hub still answers on the same port.
    expect((await fetch(`http://127.0.0.1:${off.hub.http.port}/health`)).status).toBeLessThan(500);
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
