/**
 * Issue 4 on MQTT: every message transition is published on
 * `meshhub/messages/<subscriber>/<node_id>`, through the real hub with its real users and tokens.
 * Message events carry private texts: an admin receives them; an integration subscribed to
 * `meshhub/#` receives readings and node records but never another person's messages.
 */
import type { MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mqttOf, startTestHub, type TestHub, waitFor } from '../helpers/hub.js';
import { FAST_MESSAGING, knownNodes, PASSWORD, send, subscriber } from '../messaging/helpers.js';
import { connect, endClients } from './helpers.js';

let t: TestHub;
const seen = { admin: [] as string[], integration: [] as string[] };

async function watcher(name: 'admin' | 'integration'): Promise<MqttClient> {
  await subscriber(t, name, { roles: [name], nodes: 'none' });
  const client = await connect(`mqtt://127.0.0.1:${mqttOf(t.hub).port}`, {
    username: name,
    password: PASSWORD,
  });
  client.on('message', (topic) => seen[name].push(topic));
  await client.subscribeAsync('meshhub/#');
  return client;
}

beforeAll(async () => {
  t = await startTestHub({ ...FAST_MESSAGING, SIM_TELEMETRY_SECONDS: '1' });
  await watcher('admin');
  await watcher('integration');
});
afterAll(async () => {
  await endClients();
  await t?.stop();
});

describe('message events on MQTT', () => {
  it('publishes each transition to admins only', async () => {
    const token = await subscriber(t, 'alice');
    const [node] = await knownNodes(t, 1);
    const posted = await send(t, token, node!, 'water level ok?');
    expect(posted.status).toBe(202);

    const topic = `meshhub/messages/alice/${node}`;
    await waitFor(
      () => (seen.admin.filter((x) => x === topic).length >= 2 ? true : undefined),
      15_000,
      'two transitions',
    );
    // The integration saw the hub's other events on the same `meshhub/#` subscription...
    await waitFor(
      () => (seen.integration.some((x) => x.startsWith('meshhub/readings/')) ? true : undefined),
      10_000,
      'readings',
    );
    // ...but no message event.
    expect(seen.integration.filter((x) => x.startsWith('meshhub/messages/'))).toEqual([]);
  });
});
