/**
 * Billing test helpers: the fake BTCPay on loopback, a whole hub with PLUGINS=billing pointed at
 * it (over a data directory that survives a restart), users with real tokens, and reads of the
 * stored state.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createHub, type Hub } from '../../../hub/main.js';
import { loadConfig } from '../../../hub/settings.js';
import { HubUserService } from '../../../src/auth/user-service.js';
import { BillingRepository } from '../../../src/billing/billing-repository.js';
import { SubscriptionRepository } from '../../../src/messaging/subscription-repository.js';
import { FakeBtcpay } from '../../fakes/btcpay/fake-btcpay.js';
import type { TestHub } from '../../helpers/hub.js';
import { call, FAST_MESSAGING, type Json, knownNodes, PASSWORD, tokenFor } from '../../messaging/helpers.js';

export const STORE_ID = 'StoreA1b2C3';
export const API_KEY = 'greenfield-api-key-0123456789';
export const WEBHOOK_SECRET = 'whsec-billing-test-secret';

export function fakeBtcpay(): FakeBtcpay {
  return new FakeBtcpay({ storeId: STORE_ID, apiKey: API_KEY, webhookSecret: WEBHOOK_SECRET });
}

export interface BillingHub extends TestHub {
  /** Stops the hub and keeps its data directory (for a restart). */
  halt(): Promise<void>;
}

export async function startBillingHub(
  fake: FakeBtcpay,
  options: { dataDir?: string; env?: Record<string, string> } = {},
): Promise<BillingHub> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'meshhub-billing-'));
  const env: Record<string, string> = {
    ...FAST_MESSAGING,
    DATA_DIR: dataDir,
    HTTP_HOST: '127.0.0.1',
    HTTP_PORT: '0',
    MESH_API_PORT: '0',
    RADIO: 'sim',
    SIM_PORT: '0',
    MQTT_PORT: '0',
    LOG_LEVEL: 'silent',
    PLUGINS: 'billing',
    BTCPAY_URL: fake.url,
    BTCPAY_STORE_ID: STORE_ID,
    BTCPAY_API_KEY: API_KEY,
    BTCPAY_WEBHOOK_SECRET: WEBHOOK_SECRET,
    BTCPAY_ALLOW_PRIVATE_NETWORK: 'true',
    BTCPAY_TIMEOUT_MS: '400',
    // The jobs run when a test says (scheduler.runNow), never on their own in the middle of one.
    BILLING_POLL_CRON: '0 0 1 1 *',
    BILLING_EXPIRY_CRON: '0 0 1 1 *',
    ...options.env,
  };
  const hub: Hub = await createHub(loadConfig(env), {
    log: pino({ level: 'silent' }),
    defaultMetrics: false,
    env: { ...process.env, ...env },
  });
  await hub.start();
  const baseUrl = `http://127.0.0.1:${hub.http.port}`;
  fake.webhookUrl = `${baseUrl}/api/v1/billing/webhooks/btcpay`;
  let halted = false;
  const halt = async () => {
    if (halted) return;
    halted = true;
    await hub.stop();
  };
  return {
    hub,
    dataDir,
    baseUrl,
    halt,
    async stop() {
      await halt();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A new user with `roles` and a token from the token endpoint. */
export async function userToken(t: TestHub, username: string, roles = ['subscriber']): Promise<string> {
  await new HubUserService(t.hub.store.db).add({ username, password: PASSWORD, roles });
  return tokenFor(t.baseUrl, username);
}

export async function addPlan(t: TestHub, admin: string, plan: Json): Promise<Json> {
  const res = await call(t.baseUrl, 'POST', '/api/v1/billing/plans', { token: admin, body: plan });
  if (res.status !== 201) throw new Error(`plan: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

export const buy = (t: TestHub, token: string, planId: string) =>
  call(t.baseUrl, 'POST', '/api/v1/billing/subscriptions', { token, body: { plan_id: planId } });

export const mine = async (t: TestHub, token: string): Promise<Json[]> =>
  (await call(t.baseUrl, 'GET', '/api/v1/billing/subscriptions', { token })).body.data;

export const sendText = (t: TestHub, token: string, node: string) =>
  call(t.baseUrl, 'POST', '/api/v1/messages', { token, body: { target_node_id: node, text: 'hello' } });

export const stores = (t: TestHub) => ({
  billing: new BillingRepository(t.hub.store.db),
  grants: new SubscriptionRepository(t.hub.store.db),
});

/** Moves a paid subscription's period end (and its messaging grant) to `end`: time travel without sleeping. */
export function endPeriodAt(t: TestHub, subscriptionId: string, end: number, graceMs: number): void {
  const { billing, grants } = stores(t);
  const sub = billing.subscription(subscriptionId)!;
  billing.setPeriod(sub.id, sub.status, end, Date.now());
  grants.setExpiry(sub.grantId!, end + graceMs);
}

export { call, type Json, knownNodes };
