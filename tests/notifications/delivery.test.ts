/**
 * Where a firing goes, through a whole hub on loopback: a signed JSON webhook (the receiver checks
 * the HMAC), ntfy and Apprise API formats, Web Push to a loopback push service that checks the
 * VAPID signature and decrypts the payload (tests/helpers/push-receiver.ts), retained MQTT state,
 * and a subscriber's own replies and failed texts on their own subscriptions only.
 */
import type { MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkSignature } from '../../src/billing/webhook-signature.js';
import type { Message } from '../../src/messaging/message.js';
import { mqttOf, waitFor } from '../helpers/hub.js';
import {
  type PushReceiver,
  startPushReceiver,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../helpers/push-receiver.js';
import { call, PASSWORD, subscriber } from '../messaging/helpers.js';
import { connect, endClients } from '../mqtt/helpers.js';
import { createRule, firingsOf, freshNode, heard, type NotifyHub, startNotifyHub } from './helpers.js';

const SECRET = 'a-webhook-secret-of-some-length';
let h: NotifyHub;
let hooks: WebhookReceiver;
let push: PushReceiver;

beforeAll(async () => {
  hooks = await startWebhookReceiver();
  push = await startPushReceiver();
  h = await startNotifyHub({
    NOTIFY_WEBHOOK_URL: `${hooks.url}/global`,
    NOTIFY_WEBHOOK_SECRET: SECRET,
    VAPID_SUBJECT: 'mailto:ops@example.org',
  });
});
afterAll(async () => {
  await endClients();
  await h?.t.stop();
  await hooks?.close();
  await push?.close();
});

const requestsTo = (path: string) => hooks.requests.filter((r) => r.path === path);
const subscribe = (token: string, json: unknown) =>
  call(h.t.baseUrl, 'POST', '/api/v1/notifications/push/subscriptions', { token, body: json });

describe('webhooks', () => {
  it('posts a generic JSON body signed with HMAC-SHA256 to NOTIFY_WEBHOOK_URL', async () => {
    const n = freshNode();
    const id = await createRule(h, { name: 'Gate battery', kind: 'battery_low', threshold: 25, nodes: [n] });
    heard(h, n, 0, { batteryLevel: 12 });
    const [req] = await waitFor(
      () => {
        const got = requestsTo('/global').filter((r) => JSON.parse(r.body.toString()).rule_id === id);
        return got.length ? got : undefined;
      },
      10_000,
      'the signed webhook',
    );
    expect(req!.headers['content-type']).toBe('application/json');
    expect(checkSignature(SECRET, req!.body, req!.headers['x-meshhub-signature'] as string)).toBeUndefined();
    expect(
      checkSignature('another-secret-entirely', req!.body, req!.headers['x-meshhub-signature'] as string),
    ).toBe('bad_signature');
    expect(JSON.parse(req!.body.toString())).toMatchObject({
      rule_id: id,
      rule: 'Gate battery',
      kind: 'battery_low',
      node_id: n,
      subject: n,
      state: 'on',
      title: 'Gate battery',
      message: `Battery of ${n} at 12 % (below 25 %)`,
    });
  });

  it('speaks ntfy (text with Title, Priority, Tags) and Apprise API ({title, body, type})', async () => {
    const n = freshNode();
    await createRule(h, {
      name: 'Nœud neuf',
      kind: 'new_node',
      nodes: [n],
      webhook: { url: `${hooks.url}/ntfy/mesh`, format: 'ntfy' },
    });
    await createRule(h, {
      name: 'New node',
      kind: 'new_node',
      nodes: [n],
      webhook: { url: `${hooks.url}/notify/mesh-key`, format: 'apprise' },
    });
    heard(h, n);
    const [ntfy] = await waitFor(
      () => (requestsTo('/ntfy/mesh').length ? requestsTo('/ntfy/mesh') : undefined),
      10_000,
      'ntfy',
    );
    expect(ntfy!.body.toString()).toBe(`New node ${n} heard`);
    expect(ntfy!.headers['content-type']).toContain('text/plain');
    expect(ntfy!.headers.title).toBe(`=?UTF-8?B?${Buffer.from('Nœud neuf').toString('base64')}?=`);
    expect(ntfy!.headers.priority).toBe('4');
    expect(ntfy!.headers.tags).toBe('warning,new_node');
    const [apprise] = await waitFor(
      () => (requestsTo('/notify/mesh-key').length ? requestsTo('/notify/mesh-key') : undefined),
      10_000,
      'apprise',
    );
    expect(apprise!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(apprise!.body.toString())).toEqual({
      title: 'New node',
      body: `New node ${n} heard`,
      type: 'warning',
    });
  });
});

describe('web push', () => {
  it('sends rule firings to admins’ browsers, VAPID-signed and encrypted; a gone subscription is dropped', async () => {
    const key = await call(h.t.baseUrl, 'GET', '/api/v1/notifications/push/key');
    expect(key.status).toBe(200);
    const adminBrowser = push.subscribe('admin-phone');
    expect((await subscribe(h.admin, adminBrowser.json)).status).toBe(201);
    const alice = await subscriber(h.t, 'alice');
    const aliceBrowser = push.subscribe('alice-phone');
    expect((await subscribe(alice, aliceBrowser.json)).status).toBe(201);

    const n = freshNode();
    await createRule(h, { name: 'Pushed', kind: 'new_node', nodes: [n] });
    heard(h, n);
    const got = await waitFor(
      () => push.received.find((p) => p.path === '/push/admin-phone'),
      10_000,
      'a push',
    );
    expect(push.refused).toEqual([]);
    expect(got.vapidKey).toBe(key.body.public_key);
    expect(got.claims.sub).toBe('mailto:ops@example.org');
    expect(got.payload).toMatchObject({
      title: 'Pushed',
      body: `New node ${n} heard`,
      url: '/notifications',
    });
    // Rule firings are for admins: alice's browser hears none of them.
    expect(push.received.filter((p) => p.path === '/push/alice-phone')).toEqual([]);

    // The push service says the subscription is gone: the hub forgets it.
    push.answer('admin-phone', 410);
    const m = freshNode();
    await createRule(h, { name: 'Gone', kind: 'new_node', nodes: [m] });
    heard(h, m);
    const kept = () =>
      h.t.hub.store.db
        .prepare('SELECT count(*) AS n FROM push_subscriptions WHERE endpoint = ?')
        .get(adminBrowser.endpoint) as { n: number };
    await waitFor(() => kept().n === 0 || undefined, 10_000, 'the gone subscription dropped');
    const again = await call(h.t.baseUrl, 'DELETE', '/api/v1/notifications/push/subscriptions', {
      token: h.admin,
      body: { endpoint: adminBrowser.endpoint },
    });
    expect(again.status).toBe(404);
    // Alice may remove her own subscription, once.
    const own = { token: alice, body: { endpoint: aliceBrowser.endpoint } };
    expect((await call(h.t.baseUrl, 'DELETE', '/api/v1/notifications/push/subscriptions', own)).status).toBe(
      204,
    );
    expect((await call(h.t.baseUrl, 'DELETE', '/api/v1/notifications/push/subscriptions', own)).status).toBe(
      404,
    );
  });

  it('tells a subscriber of a reply or a failed text on their own browsers only', async () => {
    const bob = await subscriber(h.t, 'bob');
    const carol = await subscriber(h.t, 'carol');
    const bobBrowser = push.subscribe('bob-phone');
    const carolBrowser = push.subscribe('carol-phone');
    expect((await subscribe(bob, bobBrowser.json)).status).toBe(201);
    expect((await subscribe(carol, carolBrowser.json)).status).toBe(201);
    const node = freshNode();
    const message = (over: Partial<Message>): Message =>
      ({
        rowId: 1,
        id: `m-${Math.random()}`,
        owner: 'bob',
        ownerName: 'bob',
        nodeId: node,
        direction: 'inbound',
        senderNodeId: node,
        targetNodeId: null,
        text: 'all fine up here',
        status: 'received',
        failureCode: null,
        failureReason: null,
        packetId: 1,
        attempts: 0,
        ackDeadline: null,
        nextAttemptAt: 0,
        createdAt: Date.now(),
        updatedAt: Date.now(),
        ...over,
      }) as Message;
    h.t.hub.bus.emit('message.updated', { kind: 'created', message: message({}) });
    h.t.hub.bus.emit('message.updated', {
      kind: 'status',
      previousStatus: 'sent',
      message: message({
        direction: 'outbound',
        status: 'failed',
        text: 'bring water',
        failureCode: 'MAX_RETRANSMIT',
        failureReason: 'no route',
      }),
    });
    // Carol's own reply, for contrast.
    h.t.hub.bus.emit('message.updated', {
      kind: 'created',
      message: message({ owner: 'carol', text: 'for carol' }),
    });
    const bobs = await waitFor(
      () => {
        const got = push.received.filter((p) => p.path === '/push/bob-phone');
        return got.length >= 2 ? got : undefined;
      },
      10_000,
      'bob’s two pushes',
    );
    expect(bobs.map((p) => p.payload)).toEqual([
      expect.objectContaining({
        title: `Reply from ${node}`,
        body: 'all fine up here',
        url: `/chat/${node}`,
      }),
      expect.objectContaining({ title: `Text to ${node} failed`, body: 'no route: “bring water”' }),
    ]);
    await waitFor(() => push.received.find((p) => p.path === '/push/carol-phone'), 10_000, 'carol’s push');
    const carols = push.received
      .filter((p) => p.path === '/push/carol-phone')
      .map((p) => (p.payload as { body: string }).body);
    expect(carols).toEqual(['for carol']);
  });

  it('refuses a subscription that is not a push service URL, or without sign-in', async () => {
    const sub = push.subscribe('x').json;
    expect((await subscribe(h.admin, { ...sub, endpoint: 'http://push.example.org/x' })).status).toBe(400);
    expect(
      (await subscribe(h.admin, { ...sub, keys: { p256dh: 'short', auth: sub.keys.auth } })).body.errors[0]
        .field,
    ).toBe('keys.p256dh');
    expect(
      (await call(h.t.baseUrl, 'POST', '/api/v1/notifications/push/subscriptions', { body: sub })).status,
    ).toBe(401);
  });
});

describe('MQTT', () => {
  it('keeps each rule’s state per node retained on meshhub/alerts/<rule>/<node_id>, for admins', async () => {
    const n = freshNode();
    const id = await createRule(h, { name: 'HA battery', kind: 'battery_low', threshold: 30, nodes: [n] });
    heard(h, n, 0, { batteryLevel: 20 });
    expect(await firingsOf(h, id)).toHaveLength(1);
    const topic = `meshhub/alerts/${id}/${n}`;
    const url = `mqtt://127.0.0.1:${mqttOf(h.t.hub).port}`;
    const listen = async (
      username: string,
    ): Promise<{ client: MqttClient; got: Array<{ topic: string; retain: boolean; state: string }> }> => {
      const client = await connect(url, { username, password: PASSWORD });
      const got: Array<{ topic: string; retain: boolean; state: string }> = [];
      client.on('message', (t, payload, packet) => {
        if (t.startsWith('meshhub/alerts/'))
          got.push({ topic: t, retain: packet.retain, state: JSON.parse(payload.toString()).state });
      });
      await client.subscribeAsync(username === 'root' ? topic : 'meshhub/#');
      return { client, got };
    };
    // Subscribed after the firing: the retained state arrives.
    const admin = await listen('root');
    await waitFor(() => admin.got.find((m) => m.topic === topic), 10_000, 'the retained state');
    expect(admin.got[0]).toEqual({ topic, retain: true, state: 'ON' });
    heard(h, n, 0, { batteryLevel: 80 });
    await waitFor(() => admin.got.find((m) => m.state === 'OFF'), 10_000, 'OFF');
    // An integration subscribed to everything hears no alerts.
    await subscriber(h.t, 'dave', { roles: ['integration'], nodes: 'none' });
    const dave = await listen('dave');
    heard(h, n, 0, { batteryLevel: 5 });
    await waitFor(
      () => admin.got.filter((m) => m.state === 'ON').length >= 2 || undefined,
      10_000,
      'ON again',
    );
    expect(dave.got.filter((m) => m.topic.startsWith('meshhub/alerts/'))).toEqual([]);
  });
});
