/**
 * Notifications test fixtures: a whole hub in-process with no radio (the test is the mesh: it
 * emits the bus events the radio, MQTT ingest and device health would), an admin and a
 * subscriber with real tokens, and the notifier actor, whose silence check a test runs itself.
 */
import { expect } from 'vitest';
import { nodeIdFromNum } from '../../src/domain/node.js';
import type { NotifierActor } from '../../src/notifications/notifier-actor.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { call, subscriber } from '../messaging/helpers.js';

export interface NotifyHub {
  t: TestHub;
  admin: string;
  notifier: NotifierActor;
}

export async function startNotifyHub(env: Record<string, string> = {}): Promise<NotifyHub> {
  const t = await startTestHub({ RADIO: 'none', NOTIFY_ALLOW_PRIVATE_NETWORK: 'true', ...env });
  const admin = await subscriber(t, 'root', { roles: ['admin'], nodes: 'none' });
  const notifier = t.hub.actor<NotifierActor>('notifications');
  if (!notifier) throw new Error('no notifications actor');
  return { t, admin, notifier };
}

let next = 0x5a000000;
/** A node id no other test uses. */
export const freshNode = () => nodeIdFromNum(next++);

export async function createRule(h: NotifyHub, body: Record<string, unknown>): Promise<number> {
  const res = await call(h.t.baseUrl, 'POST', '/api/v1/notifications/rules', { token: h.admin, body });
  if (res.status !== 201) throw new Error(`rule: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id as number;
}

// biome-ignore lint/suspicious/noExplicitAny: tests read firing bodies and assert on them
export async function firings(h: NotifyHub): Promise<any[]> {
  const res = await call(h.t.baseUrl, 'GET', '/api/v1/notifications/firings?limit=200', { token: h.admin });
  return res.body.data;
}

export async function firingsOf(h: NotifyHub, ruleId: number) {
  return (await firings(h)).filter((f) => f.rule_id === ruleId);
}

/** Rule `ruleId`'s one firing: the test fails unless it fired exactly once. */
export async function onlyFiring(h: NotifyHub, ruleId: number) {
  const f = await firingsOf(h, ruleId);
  expect(f).toHaveLength(1);
  return f[0];
}

/** A node heard `minutesAgo` minutes ago (as the node directory announces it). */
export function heard(
  h: NotifyHub,
  nodeId: string,
  minutesAgo = 0,
  extra: Record<string, unknown> = {},
): void {
  h.t.hub.bus.emit('node.updated', {
    nodeId,
    nodeNum: Number.parseInt(nodeId.slice(1), 16),
    lastHeard: Date.now() - minutesAgo * 60_000,
    ...extra,
  });
}
