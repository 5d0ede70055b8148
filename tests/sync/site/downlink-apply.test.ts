/**
 * Downlink commands applied at the site (sync/site/downlink-apply.ts) on a real SQLite file with
 * the real outbox schema: each command once, refusals recorded so a resend is refused again, and
 * what a command stores goes up through the outbox like any other record.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MessageRepository } from '../../../src/messaging/message-repository.js';
import { SubscriptionRepository } from '../../../src/messaging/subscription-repository.js';
import { closeDatabase, type Database, openDatabase } from '../../../src/store/database.js';
import { DownlinkApplier } from '../../../sync/site/downlink-apply.js';
import { Outbox } from '../../../sync/site/outbox.js';
import { enableOutbox } from '../../../sync/site/outbox-schema.js';

const HUB = '!0000abcd';
const NODE = '!a1b2c3d4';
const MESSAGE_ID = '01890a5d-ac96-774b-bcce-b302099a8057';
const NOW = Date.UTC(2026, 10, 24, 12, 0, 0);

let dir: string;
let db: Database;
let applier: DownlinkApplier;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'meshhub-downlink-'));
  db = openDatabase(join(dir, 'hub.sqlite'));
  enableOutbox(db);
  applier = new DownlinkApplier({ db, hubNodeId: () => HUB, now: () => NOW });
});
afterEach(() => {
  closeDatabase(db);
  rmSync(dir, { recursive: true, force: true });
});

function text(id: number, body: Record<string, unknown> = {}) {
  return {
    type: 'command',
    id,
    kind: 'text',
    body: {
      message_id: MESSAGE_ID,
      owner: 'alice',
      owner_name: 'Alice',
      node_id: NODE,
      text: 'water at the north well?',
      created_at: NOW - 2_000,
      ...body,
    },
  };
}

function messagesCount(): number {
  return (db.prepare('SELECT count(*) AS n FROM messages').get() as { n: number }).n;
}

function appliedRows() {
  return db.prepare('SELECT id, kind, result, reason FROM sync_downlink_applied ORDER BY id').all();
}

describe('a text command', () => {
  it('is stored once as a queued outbound message under the upstream id, then answered duplicate', () => {
    const first = applier.apply(text(7));
    expect(first?.ack).toEqual({ type: 'ack', id: 7, result: 'applied' });
    expect(first?.kind).toBe('text');
    expect(first?.changes).toHaveLength(1);
    expect(first?.changes[0]).toMatchObject({
      kind: 'created',
      message: {
        id: MESSAGE_ID,
        owner: 'upstream:alice',
        ownerName: 'Alice',
        nodeId: NODE,
        senderNodeId: HUB,
        direction: 'outbound',
        status: 'queued',
        text: 'water at the north well?',
        createdAt: NOW - 2_000,
      },
    });

    const again = applier.apply(text(7));
    expect(again).toEqual({ kind: 'text', ack: { type: 'ack', id: 7, result: 'duplicate' }, changes: [] });
    expect(messagesCount()).toBe(1);
    expect(appliedRows()).toEqual([{ id: 7, kind: 'text', result: 'applied', reason: null }]);
    // The gateway's send queue holds it.
    expect(new MessageRepository(db).nextDue(NOW)?.id).toBe(MESSAGE_ID);
  });

  it('keeps the subscriber’s hold_hours, which this hub’s gateway cuts to its own maximum', () => {
    applier.apply(text(3, { hold_hours: 30 }));
    const holdUntil = () =>
      db.prepare('SELECT hold_until FROM messages WHERE public_id = ?').pluck().get(MESSAGE_ID) as number;
    expect(holdUntil()).toBe(NOW - 2_000 + 30 * 3_600_000);
    // The gateway (on the text's creation) holds it at most this hub's MESSAGE_HOLD_HOURS (24 h).
    new MessageRepository(db).applyDefaultHold(24 * 3_600_000);
    expect(holdUntil()).toBe(NOW - 2_000 + 24 * 3_600_000);
    // A shorter one stays as asked.
    const other = '01890a5d-ac96-774b-bcce-b302099a8058';
    applier.apply(text(4, { message_id: other, hold_hours: 2 }));
    new MessageRepository(db).applyDefaultHold(24 * 3_600_000);
    expect(db.prepare('SELECT hold_until FROM messages WHERE public_id = ?').pluck().get(other)).toBe(
      NOW - 2_000 + 2 * 3_600_000,
    );
  });

  it('goes up through the outbox: the message record under the upstream id, with its queued transition', () => {
    applier.apply(text(1));
    const batch = new Outbox(db).readBatch({ maxRecords: 100, maxBytes: 1_000_000 });
    const kinds = batch?.records.map((r) => r.kind);
    expect(kinds).toContain('message');
    expect(kinds).toContain('message_transition');
    // The records as sent (the batch carries their bodies only in recordsJson).
    const records = JSON.parse(batch!.recordsJson) as { kind: string; body: unknown }[];
    const message = records.find((r) => r.kind === 'message');
    expect(message?.body).toMatchObject({ id: MESSAGE_ID, owner: 'upstream:alice', status: 'queued' });
  });

  it('created in the future by a clock ahead of the site is queued at the site time, so it is due now', () => {
    applier.apply(text(2, { created_at: NOW + 3 * 3_600_000 }));
    expect(new MessageRepository(db).get(MESSAGE_ID)).toMatchObject({ createdAt: NOW, nextAttemptAt: NOW });
  });

  it.each([
    ['the hub node', { node_id: HUB }, `${HUB} is this site's own radio`],
    [
      'the broadcast address',
      { node_id: '!ffffffff' },
      '!ffffffff is the broadcast address; a message goes to one node',
    ],
    [
      'more than one packet',
      { text: 'é'.repeat(150) },
      'text must fit one radio packet: at most 233 bytes in UTF-8 (got 300)',
    ],
    ['blank', { text: '   ' }, 'text must not be empty or only whitespace'],
    ['an owner too long to travel back', { owner: 'x'.repeat(250) }, 'owner is longer than 247 characters'],
  ])('to %s is rejected with its reason, recorded, and rejected again when resent', (_what, body, reason) => {
    const first = applier.apply(text(3, body));
    expect(first?.ack).toEqual({ type: 'ack', id: 3, result: 'rejected', reason });
    expect(first?.changes).toEqual([]);
    expect(applier.apply(text(3, body))?.ack).toEqual({ type: 'ack', id: 3, result: 'rejected', reason });
    expect(messagesCount()).toBe(0);
    expect(appliedRows()).toEqual([{ id: 3, kind: 'text', result: 'rejected', reason }]);
  });

  it('whose message id exists as another message is rejected and stores nothing', () => {
    expect(applier.apply(text(4))?.ack.result).toBe('applied');
    const other = applier.apply(text(5, { text: 'another text, same id' }));
    expect(other?.ack).toEqual({
      type: 'ack',
      id: 5,
      result: 'rejected',
      reason: `message ${MESSAGE_ID} already exists at this site`,
    });
    expect(messagesCount()).toBe(1);
    expect(new MessageRepository(db).get(MESSAGE_ID)?.text).toBe('water at the north well?');
  });

  it('with an invalid body is rejected naming the field; a frame without an id is not answered', () => {
    const bad = applier.apply(text(6, { node_id: 'north-well' }));
    expect(bad?.ack).toEqual({
      type: 'ack',
      id: 6,
      result: 'rejected',
      reason: expect.stringMatching(/^invalid command: body\.node_id: a node id/),
    });
    expect(applier.apply({ type: 'command', kind: 'text', body: {} })).toBeUndefined();
    expect(applier.apply({ type: 'command', id: -1, kind: 'text', body: {} })).toBeUndefined();
    expect(applier.apply('hello')).toBeUndefined();
    const unknown = applier.apply({ type: 'command', id: 9, kind: 'reboot', body: {} });
    expect(unknown?.kind).toBe('unknown');
    expect(unknown?.ack.result).toBe('rejected');
    expect(messagesCount()).toBe(0);
  });

  it('sent before the hub knows its node is stored with no sender node', () => {
    const early = new DownlinkApplier({ db, hubNodeId: () => null, now: () => NOW });
    expect(early.apply(text(8))?.changes[0]?.message.senderNodeId).toBeNull();
  });
});

describe('a subscription command', () => {
  const subscription = (id: number, body: Record<string, unknown> = {}) => ({
    type: 'command',
    id,
    kind: 'subscription',
    body: {
      upstream_id: 'sub-42',
      subscriber: 'alice',
      all_nodes: false,
      node_ids: [NODE, '!bbbbbbbb'],
      status: 'active',
      expires_at: NOW + 86_400_000,
      ...body,
    },
  });

  it('creates the site subscription once, then updates the same one', () => {
    const repo = new SubscriptionRepository(db);
    expect(applier.apply(subscription(10))?.ack.result).toBe('applied');
    expect(applier.apply(subscription(10))?.ack.result).toBe('duplicate');
    expect(repo.list()).toEqual([
      expect.objectContaining({
        subscriber: 'upstream:alice',
        source: 'upstream',
        reference: 'sub-42',
        status: 'active',
        allNodes: false,
        nodeIds: ['!a1b2c3d4', '!bbbbbbbb'],
        expiresAt: NOW + 86_400_000,
      }),
    ]);
    expect(repo.allows('upstream:alice', NODE, NOW)).toBe(true);

    applier.apply(subscription(11, { node_ids: ['!cccccccc', NODE] }));
    expect(repo.list()).toHaveLength(1);
    expect(repo.list()[0]?.nodeIds).toEqual(['!a1b2c3d4', '!cccccccc']);

    applier.apply(subscription(12, { status: 'revoked', node_ids: [] }));
    expect(repo.list()).toEqual([expect.objectContaining({ status: 'revoked', nodeIds: [] })]);
    expect(repo.allows('upstream:alice', NODE, NOW)).toBe(false);
  });

  it('an active one naming no nodes is rejected with the repository reason', () => {
    expect(applier.apply(subscription(13, { node_ids: [] }))?.ack).toEqual({
      type: 'ack',
      id: 13,
      result: 'rejected',
      reason: 'name at least one node id, or all nodes',
    });
  });
});

describe('a user command', () => {
  it('disabled revokes every subscription of that upstream principal, and nobody else', () => {
    const repo = new SubscriptionRepository(db);
    repo.create({ subscriber: 'upstream:alice', nodes: 'all', source: 'upstream', reference: 'a' });
    repo.create({ subscriber: 'upstream:alice', nodes: [NODE], source: 'upstream', reference: 'b' });
    repo.create({ subscriber: 'alice', nodes: [NODE], source: 'cli' });
    const disable = {
      type: 'command',
      id: 20,
      kind: 'user',
      body: { principal: 'alice', display_name: null, disabled: true },
    };
    expect(applier.apply(disable)?.ack.result).toBe('applied');
    expect(repo.list('upstream:alice').map((s) => s.status)).toEqual(['revoked', 'revoked']);
    expect(repo.list('alice').map((s) => s.status)).toEqual(['active']);
  });
});
