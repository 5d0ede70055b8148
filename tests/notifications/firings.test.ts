/**
 * Each rule kind fires exactly once on its condition, through a whole hub: the test emits the
 * bus events the radio, MQTT ingest, topology and device health would, runs the silence check,
 * and reads the firings over HTTP. A flapping node pages once per repeat limit; quiet hours
 * keep firings from webhooks and push but not from the list.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/hub.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/push-receiver.js';
import { call } from '../messaging/helpers.js';
import {
  createRule,
  firingsOf,
  freshNode,
  heard,
  type NotifyHub,
  onlyFiring,
  startNotifyHub,
} from './helpers.js';

let h: NotifyHub;
let hooks: WebhookReceiver;

beforeAll(async () => {
  hooks = await startWebhookReceiver();
  h = await startNotifyHub();
});
afterAll(async () => {
  await h?.t.stop();
  await hooks?.close();
});

const metrics = (nodeId: string, minutesAgo: number, sample: Record<string, number>) =>
  h.t.hub.bus.emit('device.metrics', { nodeId, at: Date.now() - minutesAgo * 60_000, ...sample });

describe('each rule kind fires exactly once on its condition', () => {
  it('new_node: the first time a node is heard', async () => {
    const n = freshNode();
    const id = await createRule(h, { name: 'new', kind: 'new_node', nodes: [n] });
    heard(h, n);
    heard(h, n);
    const firing = await onlyFiring(h, id);
    expect(firing).toMatchObject({ kind: 'new_node', node_id: n, message: `New node ${n} heard` });
  });

  it('node_offline: not heard for N minutes, once however often it is checked', async () => {
    const n = freshNode();
    heard(h, n, 20);
    const id = await createRule(h, { name: 'offline', kind: 'node_offline', minutes: 10, nodes: [n] });
    h.notifier.check();
    h.notifier.check();
    expect(await firingsOf(h, id)).toHaveLength(1);
    expect((await firingsOf(h, id))[0].message).toMatch(/not heard for 2\d min/);
    heard(h, n, 0);
    h.notifier.check();
    expect(await firingsOf(h, id)).toHaveLength(1);
  });

  it('node_online: heard again after being away', async () => {
    const n = freshNode();
    heard(h, n, 30);
    const id = await createRule(h, { name: 'online', kind: 'node_online', minutes: 10, nodes: [n] });
    heard(h, n, 0);
    heard(h, n, 0);
    const firing = await onlyFiring(h, id);
    expect(firing.message).toMatch(/is back after 30 min/);
  });

  it('battery_low: below the threshold', async () => {
    const n = freshNode();
    const id = await createRule(h, { name: 'low', kind: 'battery_low', threshold: 20, nodes: [n] });
    heard(h, n, 0, { batteryLevel: 50 });
    heard(h, n, 0, { batteryLevel: 15 });
    metrics(n, 0, { batteryLevel: 14 });
    const firing = await onlyFiring(h, id);
    expect(firing.message).toContain('at 15 % (below 20 %)');
  });

  it('battery_falling: a drop over the window', async () => {
    const n = freshNode();
    const id = await createRule(h, {
      name: 'falling',
      kind: 'battery_falling',
      threshold: 10,
      minutes: 60,
      nodes: [n],
    });
    metrics(n, 30, { batteryLevel: 80 });
    metrics(n, 20, { batteryLevel: 75 });
    expect(await firingsOf(h, id)).toHaveLength(0);
    metrics(n, 0, { batteryLevel: 65 });
    metrics(n, 0, { batteryLevel: 64 });
    const firing = await onlyFiring(h, id);
    expect(firing.message).toContain('fell 15 points to 65 %');
  });

  it('rebooted: uptime went back', async () => {
    const n = freshNode();
    const id = await createRule(h, { name: 'reboot', kind: 'rebooted', nodes: [n] });
    metrics(n, 2, { uptimeSeconds: 1_000 });
    metrics(n, 1, { uptimeSeconds: 1_060 });
    metrics(n, 0, { uptimeSeconds: 30 });
    metrics(n, 0, { uptimeSeconds: 90 });
    const firing = await onlyFiring(h, id);
    expect(firing.message).toContain('rebooted (uptime 30 s, was 1060 s)');
  });

  it('reading_out_of_range: a metric outside min/max', async () => {
    const n = freshNode();
    const id = await createRule(h, {
      name: 'hot',
      kind: 'reading_out_of_range',
      metric: 'temperature_c',
      max: 40,
      nodes: [n],
    });
    const reading = (temperatureC: number) =>
      h.t.hub.bus.emit('reading.stored', {
        readings: [{ nodeId: n, timestamp: Date.now(), temperatureC }],
        source: 'sim',
      });
    reading(30);
    reading(45);
    reading(46);
    const firing = await onlyFiring(h, id);
    expect(firing.message).toContain('temperature_c');
    expect(firing.message).toContain('is 45');
  });

  it('link_lost: a link not heard for N minutes', async () => {
    const [a, b] = [freshNode(), freshNode()];
    const id = await createRule(h, { name: 'link', kind: 'link_lost', minutes: 10, nodes: [a] });
    h.t.hub.bus.emit('mesh.link', {
      from: a,
      to: b,
      snr: 4,
      lastHeard: Date.now() - 20 * 60_000,
      source: 'neighborinfo',
    });
    h.notifier.check();
    h.notifier.check();
    const firing = await onlyFiring(h, id);
    expect(firing).toMatchObject({ node_id: a, subject: `${a}>${b}` });
  });

  it('follows a node that changed its number: the rule names the new one, the old is not reported quiet', async () => {
    const [old, renewed] = [freshNode(), freshNode()];
    heard(h, old, 20);
    const id = await createRule(h, { name: 'renumbered', kind: 'node_offline', minutes: 10, nodes: [old] });
    h.t.hub.bus.emit('node.renumbered', { oldNodeId: old, newNodeId: renewed, at: Date.now() });
    heard(h, renewed, 0);
    h.notifier.check();
    expect(await firingsOf(h, id)).toHaveLength(0);
    const rule = await call(h.t.baseUrl, 'GET', `/api/v1/notifications/rules/${id}`, { token: h.admin });
    expect(rule.body.nodes).toEqual([renewed]);
  });

  it('a disabled rule does not fire', async () => {
    const n = freshNode();
    const id = await createRule(h, { name: 'off', kind: 'new_node', nodes: [n], enabled: false });
    heard(h, n);
    expect(await firingsOf(h, id)).toHaveLength(0);
  });
});

describe('repeat limit and quiet hours', () => {
  it('a flapping node pages once per repeat limit, not forty times', async () => {
    const n = freshNode();
    const id = await createRule(h, {
      name: 'flap',
      kind: 'battery_low',
      threshold: 20,
      nodes: [n],
      repeat_minutes: 60,
      webhook: { url: `${hooks.url}/flap`, format: 'json' },
    });
    for (let i = 0; i < 40; i++) {
      heard(h, n, 0, { batteryLevel: 10 });
      heard(h, n, 0, { batteryLevel: 50 });
    }
    expect(await firingsOf(h, id)).toHaveLength(1);
    await waitFor(() => hooks.requests.some((r) => r.path === '/flap') || undefined, 10_000, 'the one page');
    // A later firing of another rule on the same receiver arrives after any flap page would have.
    const other = freshNode();
    await createRule(h, {
      name: 'marker',
      kind: 'new_node',
      nodes: [other],
      webhook: { url: `${hooks.url}/marker` },
    });
    heard(h, other);
    await waitFor(() => hooks.requests.some((r) => r.path === '/marker') || undefined, 10_000, 'the marker');
    expect(hooks.requests.filter((r) => r.path === '/flap')).toHaveLength(1);
  });

  it('quiet hours: stored and marked quiet, not sent', async () => {
    const minute = new Date().getUTCHours() * 60 + new Date().getUTCMinutes();
    const clock = (m: number) => {
      const x = (m + 1440) % 1440;
      return `${String(Math.floor(x / 60)).padStart(2, '0')}:${String(x % 60).padStart(2, '0')}`;
    };
    const n = freshNode();
    const quiet = await createRule(h, {
      name: 'night',
      kind: 'new_node',
      nodes: [n],
      quiet_hours: `${clock(minute - 60)}-${clock(minute + 60)}`,
      webhook: { url: `${hooks.url}/quiet` },
    });
    heard(h, n);
    const firing = await onlyFiring(h, quiet);
    expect(firing.quiet).toBe(true);
    const other = freshNode();
    await createRule(h, {
      name: 'awake',
      kind: 'new_node',
      nodes: [other],
      webhook: { url: `${hooks.url}/awake` },
    });
    heard(h, other);
    await waitFor(
      () => hooks.requests.some((r) => r.path === '/awake') || undefined,
      10_000,
      'the awake page',
    );
    expect(hooks.requests.filter((r) => r.path === '/quiet')).toHaveLength(0);
  });
});
