/**
 * Billing changes on MQTT: `meshhub/billing/<subscriber>`, to admins only. An integration
 * subscribed to `meshhub/#` keeps getting readings published after the billing change, but never
 * the change itself.
 */
import type { MqttClient } from 'mqtt';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { mayPublish } from '../../../src/mqtt/acl.js';
import type { FakeBtcpay } from '../../fakes/btcpay/fake-btcpay.js';
import { mqttOf, waitFor } from '../../helpers/hub.js';
import { PASSWORD } from '../../messaging/helpers.js';
import { connect, endClients } from '../../mqtt/helpers.js';
import { addPlan, type BillingHub, buy, fakeBtcpay, startBillingHub, userToken } from './helpers.js';

let fake: FakeBtcpay;
let t: BillingHub;
const seen = { admin: [] as Array<{ topic: string; payload: string }>, integration: [] as string[] };

async function watcher(name: 'admin' | 'integration'): Promise<MqttClient> {
  await userToken(t, name, [name]);
  const client = await connect(`mqtt://127.0.0.1:${mqttOf(t.hub).port}`, {
    username: name,
    password: PASSWORD,
  });
  client.on('message', (topic, payload) => {
    if (name === 'admin') seen.admin.push({ topic, payload: payload.toString() });
    else seen.integration.push(topic);
  });
  await client.subscribeAsync('meshhub/#');
  return client;
}

beforeAll(async () => {
  fake = fakeBtcpay();
  await fake.start();
  t = await startBillingHub(fake, { env: { SIM_TELEMETRY_SECONDS: '1' } });
  await watcher('admin');
  await watcher('integration');
});
afterAll(async () => {
  await endClients();
  await t?.stop();
  await fake?.stop();
});

it('publishes each billing change to admins only', async () => {
  const admin = await userToken(t, 'operator', ['admin']);
  await addPlan(t, admin, { id: 'monthly', name: 'Monthly', price: '5', currency: 'USD', period_days: 30 });
  const alice = await userToken(t, 'alice');
  const bought = await buy(t, alice, 'monthly');
  await fake.pay(bought.body.invoice_id);
  const active = await waitFor(
    () =>
      seen.admin.find((m) => m.topic === 'meshhub/billing/alice' && JSON.parse(m.payload).to === 'active'),
    10_000,
    'the activation on MQTT',
  );
  expect(JSON.parse(active.payload)).toMatchObject({
    subscription_id: bought.body.id,
    subscriber: 'alice',
    plan_id: 'monthly',
    from: 'pending_payment',
    to: 'active',
  });
  // The integration hears readings published after the change, and never the change.
  const after = seen.integration.length;
  await waitFor(
    () => (seen.integration.slice(after).some((x) => x.startsWith('meshhub/readings/')) ? true : undefined),
    10_000,
    'a later reading',
  );
  expect(seen.integration.filter((x) => x.startsWith('meshhub/billing/'))).toEqual([]);
});

it('lets nobody but the hub publish on meshhub/billing/#', () => {
  for (const roles of [['admin'], ['integration'], ['device']]) {
    expect(mayPublish(roles, 'meshhub/billing/alice')).toBe(false);
  }
});
