/**
 * A node of the simulated mesh reboots (its uptime starts again, SIM_REBOOT_MINUTES): a `rebooted`
 * rule fires exactly once for it, seen through the API's firings and the retained MQTT alert state,
 * with nothing but the simulator speaking the stream protocol to the hub.
 */
import type { MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeviceHealthSample } from '../../src/domain/mesh.js';
import { getJson, mqttOf, waitFor } from '../helpers/hub.js';
import { PASSWORD } from '../messaging/helpers.js';
import { collect, connect, endClients } from '../mqtt/helpers.js';
import { createRule, firingsOf, type NotifyHub, startNotifyHub } from './helpers.js';

let h: NotifyHub;
let client: MqttClient | undefined;

beforeAll(async () => {
  h = await startNotifyHub({
    RADIO: 'sim',
    SIM_BACKFILL: '0s',
    SIM_TELEMETRY_SECONDS: '2',
    SIM_REBOOT_MINUTES: '0.5',
  });
});
afterAll(async () => {
  await endClients();
  await h?.t.stop();
});

describe('a simulated node reboots', () => {
  it('fires the rebooted rule once, in the firings and on meshhub/alerts/<rule>/<node>', async () => {
    const nodeId = await waitFor(
      async () => (await getJson(`${h.t.baseUrl}/api/v1/device-health/latest`)).body.data?.[0]?.node_id,
      20_000,
      'a node’s device health',
    );
    // What the node reports: a reboot is its uptime going back. The rule is created just after one
    // reboot, so the next is half a minute away and cannot fall between the rule's creation and
    // this test's listeners (the MQTT state is retained: such a reboot would show up twice).
    const uptimes: number[] = [];
    h.t.hub.bus.on('test', 'device.metrics', (s: DeviceHealthSample) => {
      if (s.nodeId === nodeId && s.uptimeSeconds !== undefined) uptimes.push(s.uptimeSeconds);
    });
    const reboots = () => uptimes.filter((u, i) => i > 0 && u < uptimes[i - 1]!).length;
    await waitFor(() => reboots() >= 1 || undefined, 45_000, 'a first reboot (before the rule)');
    const id = await createRule(h, {
      name: 'reboot',
      kind: 'rebooted',
      nodes: [nodeId],
    });
    const before = reboots();
    client = await connect(`mqtt://127.0.0.1:${mqttOf(h.t.hub).port}`, {
      username: 'root',
      password: PASSWORD,
    });
    const alerts = collect(client, `meshhub/alerts/${id}/${nodeId}`);
    await alerts.ready;
    expect(alerts.messages).toHaveLength(0);

    await waitFor(() => reboots() > before || undefined, 45_000, 'the node to reboot (uptime back)');
    const fired = await waitFor(
      async () => {
        const f = await firingsOf(h, id);
        return f.length > 0 ? f : undefined;
      },
      10_000,
      'the firing',
    );
    // One reboot, one firing (the next reboot is half a minute away).
    expect(reboots() - before).toBe(1);
    expect(fired).toHaveLength(1);
    expect(fired[0]).toMatchObject({ kind: 'rebooted', node_id: nodeId });
    expect(fired[0].message).toMatch(/rebooted \(uptime \d+ s, was \d+ s\)/);
    const state = await waitFor(() => alerts.messages.at(-1), 10_000, 'the MQTT alert state');
    expect(state.retain).toBe(false);
    expect(JSON.parse(state.payload)).toMatchObject({ state: 'ON' });
    expect(alerts.messages.filter((m) => JSON.parse(m.payload).state === 'ON')).toHaveLength(1);
  }, 120_000);
});
