/**
 * The delivery state machine over a real SQLite database: which routing report moves a message
 * where, retries and their limits, timeouts, and that every transition is stored with its time.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeliveryTracker } from '../../src/messaging/delivery.js';
import type { Message } from '../../src/messaging/message.js';
import { MessageRepository } from '../../src/messaging/message-repository.js';
import { closeDatabase, type Database, openDatabase } from '../../src/store/database.js';

const HUB = 0x2ed2c538;
const NODE = 0x0af52a53;
const NODE_ID = '!0af52a53';
const NONE = { errorReason: 0, errorName: 'NONE' };
const MAX_RETRANSMIT = { errorReason: 5, errorName: 'MAX_RETRANSMIT' };

let db: Database;
let repo: MessageRepository;
let tracker: DeliveryTracker;
let now = 1_700_000_000_000;

beforeEach(() => {
  db = openDatabase(':memory:');
  repo = new MessageRepository(db);
  tracker = new DeliveryTracker(repo, { ackTimeoutMs: 60_000, maxRetries: 3, retryDelayMs: 30_000 });
});
afterEach(() => closeDatabase(db));

function queue(): Message {
  return repo.createOutbound({
    owner: 'alice',
    ownerName: 'alice',
    nodeId: NODE_ID,
    senderNodeId: null,
    text: 'hi',
    at: now,
  });
}

/** Hands the message to the "radio": returns the packet id of this attempt. */
function attempt(message: Message): number {
  const current = repo.getByRowId(message.rowId)!;
  const packetId = 1000 * current.rowId + current.attempts;
  expect(repo.beginAttempt(current, packetId, now, now + 60_000)).toBe(true);
  return packetId;
}

/** Moves the clock on and returns the new time. */
function tick(ms: number): number {
  now += ms;
  return now;
}

const statuses = (m: Message) => repo.history(m.rowId).map((h) => h.status);

describe('DeliveryTracker', () => {
  it('implicit ACK from our radio → sent; ACK from the destination → delivered', () => {
    const m = queue();
    const id = attempt(m);
    expect(tracker.onRouting({ from: HUB, requestId: id, ...NONE }, tick(800))).toMatchObject([
      { kind: 'status', previousStatus: 'queued', message: { status: 'sent', ackDeadline: null } },
    ]);
    expect(tracker.onRouting({ from: NODE, requestId: id, ...NONE }, tick(2_000))).toMatchObject([
      { message: { status: 'delivered' } },
    ]);
    expect(statuses(m)).toEqual(['queued', 'sent', 'delivered']);
    const times = repo.history(m.rowId).map((h) => h.at);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    // A second ACK changes nothing.
    expect(tracker.onRouting({ from: NODE, requestId: id, ...NONE }, now)).toEqual([]);
  });

  it('a destination ACK without an implicit one (a direct neighbour) goes through sent', () => {
    const m = queue();
    const id = attempt(m);
    const changes = tracker.onRouting({ from: NODE, requestId: id, ...NONE }, tick(500));
    expect(changes.map((c) => c.message.status)).toEqual(['sent', 'delivered']);
  });

  it('ignores reports for packets that are not ours', () => {
    const m = queue();
    attempt(m);
    expect(tracker.onRouting({ from: NODE, requestId: 424242, ...NONE }, now)).toEqual([]);
    expect(repo.getByRowId(m.rowId)?.status).toBe('queued');
  });

  it('retries a transient error up to 3 times after the retry delay, then fails with the reason', () => {
    const m = queue();
    for (let retry = 1; retry <= 3; retry++) {
      const id = attempt(m);
      const [change] = tracker.onRouting({ from: HUB, requestId: id, ...MAX_RETRANSMIT }, tick(5_000));
      expect(change).toMatchObject({
        kind: 'retry',
        message: { status: 'queued', nextAttemptAt: now + 30_000, ackDeadline: null },
      });
      expect(repo.history(m.rowId).at(-1)?.reason).toMatch(new RegExp(`retry ${retry} of 3 in 30 s`));
      expect(repo.nextDue(now)).toBeUndefined();
      now += 30_000;
      expect(repo.nextDue(now)?.rowId).toBe(m.rowId);
    }
    const id = attempt(m);
    const [last] = tracker.onRouting({ from: HUB, requestId: id, ...MAX_RETRANSMIT }, tick(5_000));
    expect(last?.message).toMatchObject({ status: 'failed', failureCode: 'MAX_RETRANSMIT', attempts: 4 });
    expect(last?.message.failureReason).toMatch(/\[MAX_RETRANSMIT\], after 4 attempts$/);
    expect(statuses(m)).toEqual(['queued', 'queued', 'queued', 'queued', 'failed']);
  });

  it('fails at once on a permanent error, and ignores a NAK of an earlier attempt', () => {
    const m = queue();
    const first = attempt(m);
    tracker.onRouting({ from: HUB, requestId: first, ...MAX_RETRANSMIT }, tick(1_000));
    now += 30_000;
    const second = attempt(m);
    expect(tracker.onRouting({ from: HUB, requestId: first, ...MAX_RETRANSMIT }, now)).toEqual([]);
    const [failed] = tracker.onRouting(
      { from: NODE, requestId: second, errorReason: 35, errorName: 'PKI_UNKNOWN_PUBKEY' },
      now,
    );
    expect(failed?.message).toMatchObject({ status: 'failed', failureCode: 'PKI_UNKNOWN_PUBKEY' });
    expect(failed?.message.failureReason).toBe(
      'the node has no public key to decrypt it [PKI_UNKNOWN_PUBKEY], after 2 attempts',
    );
  });

  it('a timeout without any ACK retries, then fails with ACK_TIMEOUT; nothing times out once sent', () => {
    const m = queue();
    for (let i = 0; i < 4; i++) {
      attempt(m);
      expect(tracker.expire(now + 59_999)).toEqual([]);
      const [change] = tracker.expire(tick(60_000));
      expect(change?.message.status).toBe(i < 3 ? 'queued' : 'failed');
      now += 30_000;
    }
    const failed = repo.getByRowId(m.rowId)!;
    expect(failed.failureCode).toBe('ACK_TIMEOUT');
    expect(failed.failureReason).toBe('no acknowledgement within 60 s after 4 attempts [ACK_TIMEOUT]');

    const other = queue();
    const id = attempt(other);
    tracker.onRouting({ from: HUB, requestId: id, ...NONE }, now);
    expect(tracker.expire(now + 3_600_000)).toEqual([]);
    expect(repo.getByRowId(other.rowId)?.status).toBe('sent');
  });

  it('a late ACK from the destination after a failure → delivered, clearing the failure', () => {
    const m = queue();
    const id = attempt(m);
    tracker.onRouting({ from: HUB, requestId: id, errorReason: 7, errorName: 'TOO_LARGE' }, now);
    const [late] = tracker.onRouting({ from: NODE, requestId: id, ...NONE }, tick(10_000));
    expect(late?.message).toMatchObject({ status: 'delivered', failureCode: null, failureReason: null });
    expect(repo.history(m.rowId).at(-1)?.reason).toBe('the node acknowledged it after all');
  });
});
