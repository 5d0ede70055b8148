/** A taken MQTT_PORT: the hub still runs, on a free port, and says so in /health. */
import { createServer, type Server } from 'node:net';
import { afterAll, expect, it } from 'vitest';
import { getJson, mqttOf } from '../helpers/hub.js';
import { connect, endClients, type MqttTestHub, startMqttHub } from './helpers.js';

let blocker: Server;
let t: MqttTestHub | undefined;
afterAll(async () => {
  await endClients();
  await t?.stop();
  await new Promise((r) => blocker.close(r));
});

it('falls back to a free port when MQTT_PORT is taken, and reports both ports', async () => {
  blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  const taken = (blocker.address() as { port: number }).port;
  t = await startMqttHub({ MQTT_PORT: String(taken), MQTT_ALLOW_ANONYMOUS: 'true' });
  expect(mqttOf(t.hub).port).not.toBe(taken);
  const health = await getJson(`${t.baseUrl}/health`);
  expect(health.body.actors.find((a: { name: string }) => a.name === 'mqtt')).toMatchObject({
    state: 'running',
    port: mqttOf(t.hub).port,
    requested_port: taken,
    websocket: false,
    anonymous: true,
  });
  const client = await connect(t.mqttUrl);
  expect(client.connected).toBe(true);
  const health2 = await getJson(`${t.baseUrl}/health`);
  expect(health2.body.actors.find((a: { name: string }) => a.name === 'mqtt').clients).toBe(1);
  const metrics = await (await fetch(`${t.baseUrl}/metrics`)).text();
  expect(metrics).toMatch(/^meshhub_mqtt_clients 1$/m);
});
