/**
 * The messaging API over real HTTP against a whole hub with the simulator over TCP: the round
 * trip to `delivered`, a failure with its named reason, replies and unread counts, two
 * subscribers kept apart, nicknames, and every kind of bad input (nothing stored, nothing sent).
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messagingRoles, SIM_REPLIES } from '../../src/mesh/simulator/messaging-responder.js';
import { createSimNetwork } from '../../src/mesh/simulator/nodes.js';
import { startTestHub, type TestHub, waitFor } from '../helpers/hub.js';
import { call, FAST_MESSAGING, type Json, knownNodes, send, subscriber, waitForStatus } from './helpers.js';

let t: TestHub;
let hubNodeId: string;
const network = createSimNetwork({ seed: 1, nodeCount: 6, center: { latitude: 47.3769, longitude: 8.5417 } });
const roles = messagingRoles(network);
const outOfRange = roles.outOfRange!.id;
const replier = roles.repliers[0]!.id;
/** Nodes that acknowledge and never reply: nothing arrives in their conversations by itself. */
const quietNodes = network.nodes
  .filter((n) => n !== roles.outOfRange && !roles.repliers.includes(n))
  .map((n) => n.id);
const quiet = quietNodes[0]!;

beforeAll(async () => {
  t = await startTestHub(FAST_MESSAGING);
  await knownNodes(t, 6);
  hubNodeId = `!${t.hub.bus.last('radio.status')!.myNodeNum!.toString(16).padStart(8, '0')}`;
});
afterAll(() => t?.stop());

/**
 * One hub for the file, but every test makes its own users: no test sees messages,
 * conversations or idempotency keys another one left behind, in whatever order they run.
 */
async function user(
  role = 'user',
  options: Parameters<typeof subscriber>[2] = {},
): Promise<{ name: string; token: string }> {
  const name = `${role}-${randomUUID().slice(0, 8)}`;
  return { name, token: await subscriber(t, name, options) };
}

/** Messages `name` has sent (replies from the mesh to them arrive on their own time). */
const sentBy = (name: string) =>
  t.hub.store.db
    .prepare("SELECT count(*) FROM messages WHERE owner_name = ? AND direction = 'outbound'")
    .pluck()
    .get(name) as number;

describe('POST /api/v1/messages → delivery', () => {
  it('answers 202 with the queued record and Location, then goes queued → sent → delivered', async () => {
    const { token: alice } = await user('alice');
    const res = await send(t, alice, quiet, 'Are you at the hut?');
    expect(res.status).toBe(202);
    expect(Object.keys(res.body).sort()).toEqual(
      ['created_at', 'direction', 'id', 'sender_node_id', 'status', 'target_node_id', 'text'].sort(),
    );
    expect(res.body).toMatchObject({
      direction: 'outbound',
      status: 'queued',
      text: 'Are you at the hut?',
      target_node_id: quiet,
      sender_node_id: hubNodeId,
    });
    expect(res.body.created_at).toMatch(/Z$/);
    expect(res.headers.get('location')).toBe(`/api/v1/messages/${res.body.id}`);

    const done = await waitForStatus(t, alice, res.body.id, 'delivered');
    expect(done.history.map((h: Json) => h.status)).toEqual(['queued', 'sent', 'delivered']);
    const times = done.history.map((h: Json) => Date.parse(h.at));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(done.attempts).toBe(1);
    expect(done.failure_reason).toBeUndefined();
  });

  it('holds a text to a node out of range: queued, waiting for the node, each attempt with its reason', async () => {
    const { token: alice } = await user('alice');
    const res = await send(t, alice, outOfRange, 'Anyone there?');
    expect(res.status).toBe(202);
    // The quick retries (MESSAGE_MAX_RETRIES = 3) pass; then it waits for the node (docs/held-texts.md).
    const held = await waitFor(
      async () => {
        const r = await call(t.baseUrl, 'GET', `/api/v1/messages/${res.body.id}`, { token: alice });
        return r.body.attempts === 4 && r.body.history.length === 5 ? r.body : undefined;
      },
      20_000,
      'four attempts',
    );
    expect(held).toMatchObject({ status: 'queued', waiting_for_node: outOfRange });
    expect(held.failure_code).toBeUndefined();
    expect(Date.parse(held.hold_until) - Date.parse(held.created_at)).toBe(24 * 3_600_000);
    const attempts = held.history.slice(1);
    expect(attempts.map((h: Json) => [h.status, h.attempt, h.code])).toEqual(
      [1, 2, 3, 4].map((n) => ['queued', n, 'MAX_RETRANSMIT']),
    );
    expect(attempts[3].reason).toMatch(
      // The simulator's unreachable node may still be heard (its telemetry): then it is not called out of range.
      /no node acknowledged it.*\[MAX_RETRANSMIT\]; (waiting for .+ to come in range \((last heard .+ ago|never heard)\): sent again as soon as it is heard|.+ was heard .+ ago but is not acknowledging: trying again when it is next heard), at the latest in 5 min$/,
    );
  });

  it('fails a text without a hold (hold_hours 0) with the named reason after 3 retries', async () => {
    const { token: alice } = await user('alice');
    const res = await call(t.baseUrl, 'POST', '/api/v1/messages', {
      token: alice,
      body: { target_node_id: outOfRange, text: 'Anyone there?', hold_hours: 0 },
    });
    expect(res.status).toBe(202);
    const failed = await waitForStatus(t, alice, res.body.id, 'failed', 20_000);
    expect(failed.failure_code).toBe('MAX_RETRANSMIT');
    expect(failed.failure_reason).toMatch(/no node acknowledged it.*\[MAX_RETRANSMIT\], after 4 attempts/);
    expect(failed.attempts).toBe(4);
    expect(failed.hold_until).toBeNull();
    expect(failed.waiting_for_node).toBeNull();
    const statuses = failed.history.map((h: Json) => h.status);
    expect(statuses).toEqual(['queued', 'queued', 'queued', 'queued', 'failed']);
    expect(failed.history[1].reason).toMatch(/retry 1 of 3/);
    // Its conversation says a text was not delivered, and none waits.
    const list = await call(t.baseUrl, 'GET', '/api/v1/messages/conversations', { token: alice });
    expect(list.body.data.find((c: Json) => c.node_id === outOfRange)).toMatchObject({
      failed_count: 1,
      waiting_count: 0,
    });
  });

  it('counts replies as unread until the conversation is read', async () => {
    const { token: alice } = await user('alice');
    for (const text of ['Water level?', 'And the gate?'])
      expect((await send(t, alice, replier, text)).status).toBe(202);
    const summary = await waitFor(
      async () => {
        const r = await call(t.baseUrl, 'GET', '/api/v1/messages/conversations', { token: alice });
        const mine = r.body.data.find((c: Json) => c.node_id === replier);
        return mine?.unread_count === 2 ? mine : undefined;
      },
      15_000,
      'two unread replies',
    );
    expect(SIM_REPLIES).toContain(summary.latest_text);
    expect(summary.nickname).toBe(roles.repliers[0]!.longName);

    const conversation = await call(t.baseUrl, 'GET', `/api/v1/messages/conversations/${replier}`, {
      token: alice,
    });
    expect(conversation.status).toBe(200);
    const inbound = conversation.body.data.filter((m: Json) => m.direction === 'inbound');
    expect(inbound).toHaveLength(2);
    for (const m of inbound) {
      expect(m).toMatchObject({ sender_node_id: replier, target_node_id: hubNodeId, status: 'read' });
    }
    expect(conversation.body.data.map((m: Json) => m.direction).slice(0, 2)).toEqual([
      'outbound',
      'outbound',
    ]);

    const after = await call(t.baseUrl, 'GET', '/api/v1/messages/conversations', { token: alice });
    expect(after.body.data.find((c: Json) => c.node_id === replier).unread_count).toBe(0);
  });

  it('lists conversations newest first', async () => {
    const { token: alice } = await user('alice');
    const [first, second, third] = quietNodes;
    for (const node of [first!, second!, third!]) {
      const res = await send(t, alice, node, 'hello');
      expect(res.status).toBe(202);
      // Distinct times, so the order says something.
      await waitFor(() => Date.now() > Date.parse(res.body.created_at) || undefined, 1_000, 'the clock');
    }
    const r = await call(t.baseUrl, 'GET', '/api/v1/messages/conversations', { token: alice });
    expect(r.body.data.map((c: Json) => c.node_id)).toEqual([third, second, first]);
    const times = r.body.data.map((c: Json) => Date.parse(c.latest_at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    for (const c of r.body.data)
      expect(Object.keys(c).sort()).toEqual([
        'failed_count',
        'latest_at',
        'latest_text',
        'nickname',
        'node_id',
        'unread_count',
        'waiting_count',
      ]);
  });
});

describe('two subscribers', () => {
  it('never see each other’s messages or conversations', async () => {
    const { token: alice } = await user('alice');
    const { token: bob } = await user('bob');
    const mine = await send(t, alice, quietNodes[0]!, 'for alice only');
    expect(mine.status).toBe(202);
    const bobsList = await call(t.baseUrl, 'GET', '/api/v1/messages/conversations', { token: bob });
    expect(bobsList.body.data).toEqual([]);
    const bobsView = await call(t.baseUrl, 'GET', `/api/v1/messages/conversations/${quietNodes[0]}`, {
      token: bob,
    });
    expect(bobsView.body.data).toEqual([]);
    const peek = await call(t.baseUrl, 'GET', `/api/v1/messages/${mine.body.id}`, { token: bob });
    expect(peek.status).toBe(404);
    expect(peek.headers.get('content-type')).toMatch(/^application\/problem\+json/);

    expect((await send(t, bob, quietNodes[0]!, 'for bob only')).status).toBe(202);
    const alicesView = await call(t.baseUrl, 'GET', `/api/v1/messages/conversations/${quietNodes[0]}`, {
      token: alice,
    });
    expect(alicesView.body.data.map((m: Json) => m.text)).not.toContain('for bob only');
  });
});

describe('subscriptions and roles', () => {
  it('403 without a subscription covering the node; 202 for a covered one', async () => {
    const { name: carolName, token: carol } = await user('carol', { nodes: 'none' });
    const res = await send(t, carol, quietNodes[1]!, 'hello');
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({
      status: 403,
      detail: `your subscription does not allow messaging ${quietNodes[1]}`,
    });
    const { name: daveName, token: dave } = await user('dave', { nodes: [quietNodes[1]!] });
    expect((await send(t, dave, quietNodes[1]!, 'hello')).status).toBe(202);
    expect((await send(t, dave, quietNodes[2]!, 'hello')).status).toBe(403);
    expect(sentBy(carolName)).toBe(0);
    expect(sentBy(daveName)).toBe(1);
  });

  it('403 once a subscription has expired', async () => {
    const expiresAt = Date.now() + 1_000;
    const { token: erin } = await user('erin', { expiresAt });
    expect((await send(t, erin, quietNodes[1]!, 'quick')).status).toBe(202);
    await waitFor(() => Date.now() > expiresAt || undefined, 2_000, 'the expiry');
    const late = await send(t, erin, quietNodes[1]!, 'too late');
    expect(late.status).toBe(403);
    expect(late.body.detail).toBe(
      `your subscription lapsed at ${new Date(expiresAt).toISOString()}; ask the hub operator to renew it`,
    );
  });

  it('403 for a token without the subscriber or admin role', async () => {
    const { token: device } = await user('sensor', { roles: ['device'] });
    const res = await call(t.baseUrl, 'GET', '/api/v1/messages/conversations', { token: device });
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toMatch(/error="insufficient_scope"/);
  });

  it('admins see inbound texts nobody could be matched with; subscribers may not', async () => {
    const { token: admin } = await user('root', { roles: ['admin'], nodes: 'none' });
    const { token: alice } = await user('alice');
    expect((await call(t.baseUrl, 'GET', '/api/v1/messages/unmatched', { token: admin })).status).toBe(200);
    expect((await call(t.baseUrl, 'GET', '/api/v1/messages/unmatched', { token: alice })).status).toBe(403);
  });
});

describe('unknown things', () => {
  it('404 for a node the hub has never heard of, storing nothing', async () => {
    const { name, token: alice } = await user('alice');
    const res = await send(t, alice, '!00000001', 'hello');
    expect(res.status).toBe(404);
    expect(res.body.detail).toBe('no node !00000001 is known to this hub');
    expect(sentBy(name)).toBe(0);
  });

  it('404 for an unknown message id, 400 for a malformed one', async () => {
    const { token: alice } = await user('alice');
    const unknown = await call(t.baseUrl, 'GET', '/api/v1/messages/3f1c6a2e-0000-4000-8000-000000000000', {
      token: alice,
    });
    expect(unknown.status).toBe(404);
    const malformed = await call(t.baseUrl, 'GET', '/api/v1/messages/42', { token: alice });
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors).toEqual([{ field: 'id', message: 'must be a message id (a UUID)' }]);
  });

  it('400 for a malformed node id in a conversation path', async () => {
    const { token: alice } = await user('alice');
    const res = await call(t.baseUrl, 'GET', '/api/v1/messages/conversations/a1b2c3d4', { token: alice });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].field).toBe('node_id');
  });
});

describe('bad bodies: a 400 naming the field, nothing stored, nothing sent', () => {
  const long = 'x'.repeat(201);
  const wide = 'é'.repeat(117); // 117 characters, 234 bytes
  const cases: Array<[string, unknown, string, RegExp]> = [
    ['missing target', { text: 'hi' }, 'target_node_id', /is required/],
    ['missing text', { target_node_id: '!00000002' }, 'text', /is required/],
    [
      'extra field',
      { target_node_id: '!00000002', text: 'hi', priority: 1 },
      'priority',
      /not a known field/,
    ],
    ['text not a string', { target_node_id: '!00000002', text: 42 }, 'text', /must be a string/],
    ['node id not a string', { target_node_id: 1, text: 'hi' }, 'target_node_id', /must be a string/],
    ['empty text', { target_node_id: '!00000002', text: '' }, 'text', /empty or only whitespace/],
    ['whitespace text', { target_node_id: '!00000002', text: ' \n\t ' }, 'text', /empty or only whitespace/],
    [
      '201 characters',
      { target_node_id: '!00000002', text: long },
      'text',
      /at most 200 characters \(got 201\)/,
    ],
    [
      '234 bytes',
      { target_node_id: '!00000002', text: wide },
      'text',
      /at most 233 bytes in UTF-8 \(got 234\)/,
    ],
    ['control character', { target_node_id: '!00000002', text: 'a\u0007b' }, 'text', /control characters/],
    ['no bang', { target_node_id: 'a1b2c3d4', text: 'hi' }, 'target_node_id', /must be a node id/],
    ['upper case', { target_node_id: '!A1B2C3D4', text: 'hi' }, 'target_node_id', /must be a node id/],
    ['too short', { target_node_id: '!a1b2c3', text: 'hi' }, 'target_node_id', /must be a node id/],
    ['not hex', { target_node_id: '!zzzzzzzz', text: 'hi' }, 'target_node_id', /must be a node id/],
    ['broadcast', { target_node_id: '!ffffffff', text: 'hi' }, 'target_node_id', /broadcast/],
    ['array body', [1, 2], '(body)', /JSON object/],
    ['null body', null, '(body)', /JSON object/],
  ];

  it.each(cases)('%s', async (_name, body, field, message) => {
    const { name, token: alice } = await user('alice');
    const res = await call(t.baseUrl, 'POST', '/api/v1/messages', { token: alice, body });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const error = res.body.errors.find((e: Json) => e.field === field);
    expect(error?.message).toMatch(message);
    expect(sentBy(name)).toBe(0);
  });

  it('names both limits when text is too long in characters and in bytes', async () => {
    const { token: alice } = await user('alice');
    const res = await send(t, alice, quietNodes[0]!, 'é'.repeat(201));
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: Json) => e.message)).toEqual([
      'must be at most 200 characters (got 201)',
      'must fit one radio packet: at most 233 bytes in UTF-8 (got 402)',
    ]);
  });

  it('accepts exactly 200 characters and exactly 233 bytes', async () => {
    const { token: alice } = await user('alice');
    expect((await send(t, alice, quietNodes[0]!, 'y'.repeat(200))).status).toBe(202);
    expect((await send(t, alice, quietNodes[0]!, `${'é'.repeat(116)}z`)).status).toBe(202);
  });

  it("400 for the hub's own node, 415 for a non-JSON body, 400 for malformed JSON, 413 for a huge body", async () => {
    const { token: alice } = await user('alice');
    const own = await send(t, alice, hubNodeId, 'talking to myself');
    expect(own.status).toBe(400);
    expect(own.body.errors).toEqual([{ field: 'target_node_id', message: "is the hub's own radio" }]);
    const form = await call(t.baseUrl, 'POST', '/api/v1/messages', {
      token: alice,
      raw: 'target_node_id=!00000002',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(415);
    const broken = await call(t.baseUrl, 'POST', '/api/v1/messages', { token: alice, raw: '{"text": ' });
    expect(broken.status).toBe(400);
    expect(broken.body.detail).toBe('the request body is not valid JSON');
    const huge = await call(t.baseUrl, 'POST', '/api/v1/messages', {
      token: alice,
      raw: JSON.stringify({ target_node_id: quietNodes[0], text: 'x'.repeat(10_000) }),
    });
    expect(huge.status).toBe(413);
  });

  it('property: any body is a 202 within the limits or a 4xx that stores nothing, never a 5xx', async () => {
    const { name, token: alice } = await user('alice');
    const nodeId = fc.oneof(
      fc.constantFrom(...quietNodes),
      fc.string({ maxLength: 12 }),
      fc.integer(),
      fc.constant(null),
    );
    const text = fc.oneof(
      fc.string({ maxLength: 260, unit: 'grapheme' }),
      fc.string({ maxLength: 5 }),
      fc.anything(),
    );
    const body = fc.oneof(
      fc.record({ target_node_id: nodeId, text }, { requiredKeys: [] }),
      fc.record({ target_node_id: nodeId, text, extra: fc.anything() }, { requiredKeys: [] }),
      fc.anything(),
    );
    await fc.assert(
      fc.asyncProperty(body, async (input) => {
        const before = sentBy(name);
        const res = await call(t.baseUrl, 'POST', '/api/v1/messages', {
          token: alice,
          raw: JSON.stringify(input) ?? '',
        });
        expect(res.status).toBeLessThan(500);
        if (res.status === 202) {
          const sent = input as { text: string };
          expect([...sent.text].length).toBeLessThanOrEqual(200);
          expect(Buffer.byteLength(sent.text)).toBeLessThanOrEqual(233);
          expect(sentBy(name)).toBe(before + 1);
        } else {
          expect([400, 403, 404, 413, 415]).toContain(res.status);
          expect(sentBy(name)).toBe(before);
        }
      }),
      { numRuns: 80 },
    );
  });
});

describe('Idempotency-Key', () => {
  it('replays the first 202 for a retried POST instead of sending twice', async () => {
    const { name, token: alice } = await user('alice');
    const headers = { 'idempotency-key': 'retry-me-1' };
    const first = await send(t, alice, quietNodes[3]!, 'only once', headers);
    const second = await send(t, alice, quietNodes[3]!, 'only once', headers);
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('location')).toBe(first.headers.get('location'));
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(sentBy(name)).toBe(1);
  });

  it('422 for the same key with another body; keys are per subscriber; 400 for a malformed key', async () => {
    const { token: alice } = await user('alice');
    const { token: bob } = await user('bob');
    const headers = { 'idempotency-key': 'retry-me-2' };
    expect((await send(t, alice, quietNodes[3]!, 'first', headers)).status).toBe(202);
    const clash = await send(t, alice, quietNodes[3]!, 'second', headers);
    expect(clash.status).toBe(422);
    expect(clash.body.errors[0].field).toBe('Idempotency-Key');
    expect((await send(t, bob, quietNodes[3]!, 'second', headers)).status).toBe(202);
    const bad = await send(t, alice, quietNodes[3]!, 'x', { 'idempotency-key': 'has space' });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].field).toBe('Idempotency-Key');
  });
});

describe('nicknames', () => {
  it('the subscriber’s nickname replaces the node name in their list only; null clears it', async () => {
    const { token: alice } = await user('alice');
    const { token: bob } = await user('bob');
    const node = quiet;
    for (const token of [alice, bob]) expect((await send(t, token, node, 'hello')).status).toBe(202);
    const set = await call(t.baseUrl, 'PATCH', `/api/v1/messages/conversations/${node}`, {
      token: alice,
      body: { nickname: 'Ana at the mill' },
    });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ node_id: node, nickname: 'Ana at the mill' });
    const bobs = await call(t.baseUrl, 'GET', '/api/v1/messages/conversations', { token: bob });
    expect(bobs.body.data.find((c: Json) => c.node_id === node).nickname).not.toBe('Ana at the mill');
    const cleared = await call(t.baseUrl, 'PATCH', `/api/v1/messages/conversations/${node}`, {
      token: alice,
      body: { nickname: null },
    });
    expect(cleared.body.nickname).toBe(network.nodes.find((n) => n.id === node)?.longName);
    const bad = await call(t.baseUrl, 'PATCH', `/api/v1/messages/conversations/${node}`, {
      token: alice,
      body: { nickname: '   ' },
    });
    expect(bad.status).toBe(400);
    const none = await call(t.baseUrl, 'PATCH', '/api/v1/messages/conversations/!00000009', {
      token: alice,
      body: { nickname: 'x' },
    });
    expect(none.status).toBe(404);
  });
});

describe('paging', () => {
  it('pages a conversation oldest first with a Link to the next page', async () => {
    const { token: frank } = await user('frank');
    const node = quiet;
    for (const text of ['one', 'two', 'three']) expect((await send(t, frank, node, text)).status).toBe(202);
    const first = await call(t.baseUrl, 'GET', `/api/v1/messages/conversations/${node}?limit=2`, {
      token: frank,
    });
    expect(first.body.data.map((m: Json) => m.text)).toEqual(['one', 'two']);
    const link = first.headers.get('link')!;
    expect(link).toMatch(/rel="next"/);
    const next = await call(t.baseUrl, 'GET', link.slice(1, link.indexOf('>')), { token: frank });
    expect(next.body.data.map((m: Json) => m.text)).toEqual(['three']);
    expect(next.headers.get('link')).toBeNull();
    const badCursor = await call(t.baseUrl, 'GET', `/api/v1/messages/conversations/${node}?cursor=nope`, {
      token: frank,
    });
    expect(badCursor.status).toBe(400);
    expect(badCursor.body.errors[0].field).toBe('cursor');
    const badLimit = await call(t.baseUrl, 'GET', '/api/v1/messages/conversations?limit=0', { token: frank });
    expect(badLimit.status).toBe(400);
  });
});
