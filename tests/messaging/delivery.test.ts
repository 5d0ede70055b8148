/**
 * The delivery state machine over a real SQLite database: which routing report moves a message
 * where, retries and their limits, timeouts, and that every transition is stored with its time;
 * held texts (docs/held-texts.md): an unreachable node keeps the text queued until its hold ends,
 * texts to one node keep their order, and a node heard again makes its texts due.
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
  tracker = new DeliveryTracker(
    repo,
    { ackTimeoutMs: 60_000, maxRetries: 3, retryDelayMs: 30_000, holdRetryMaxMs: 3_600_000 },
    (nodeId) => ({ name: `Ana (${nodeId})`, lastHeardAt: now - 3 * 3_600_000 }),
  );
});
afterEach(() => closeDatabase(db));

const HOUR = 3_600_000;

/** A queued text; without `holdHours` it has no hold (it fails after the retries, as before holds). */
function queue(holdHours = 0, nodeId = NODE_ID): Message {
  return repo.createOutbound({
    owner: 'alice',
    ownerName: 'alice',
    nodeId,
    senderNodeId: null,
    text: 'hi',
    at: now,
    holdUntil: now + holdHours * HOUR,
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
  it("NO_RESPONSE from the destination → delivered: the node's radio got it, only no app there replied", () => {
    const m = queue(24);
    const id = attempt(m);
    tracker.onRouting({ from: HUB, requestId: id, ...NONE }, tick(800));
    const changes = tracker.onRouting(
      { from: NODE, requestId: id, errorReason: 8, errorName: 'NO_RESPONSE' },
      tick(2_000),
    );
    expect(changes).toMatchObject([{ message: { status: 'delivered', failureCode: null } }]);
    expect(statuses(m)).toEqual(['queued', 'sent', 'delivered']);
    expect(repo.history(m.rowId).at(-1)?.reason).toBe(
      "the node's radio received it; no app on the node replied [NO_RESPONSE]",
    );
  });

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

  it('holds a text whose node cannot be reached: quick retries, then a slow backoff, waiting for the node', () => {
    const m = queue(24);
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 7; attempt++) {
      const id = attempt1(m);
      const [change] = tracker.onRouting({ from: HUB, requestId: id, ...MAX_RETRANSMIT }, tick(5_000));
      expect(change?.message).toMatchObject({ status: 'queued', heldSince: expect.any(Number) });
      delays.push(change!.message.nextAttemptAt - now);
      now = change!.message.nextAttemptAt;
    }
    // 3 quick retries, then 5, 10, 20, 40 min (capped at 1 h).
    expect(delays).toEqual([30_000, 30_000, 30_000, 300_000, 600_000, 1_200_000, 2_400_000]);
    const last = repo.history(m.rowId).at(-1)!;
    expect(last).toMatchObject({ status: 'queued', attempt: 7, code: 'MAX_RETRANSMIT' });
    expect(last.reason).toMatch(
      /\[MAX_RETRANSMIT\]; waiting for Ana \(!0af52a53\) to come in range \(last heard 3 h ago\): sent again as soon as it is heard, at the latest in 40 min$/,
    );
    expect(tracker.retryDelayMs(20)).toBe(3_600_000);
    expect(repo.getByRowId(m.rowId)?.status).toBe('queued');
  });

  it('fails a held text when its hold ends: after an attempt, or while it waits', () => {
    const tried = queue(1);
    const waiting = queue(2, '!0000beef');
    attempt1(tried);
    const [held] = tracker.onRouting(
      { from: HUB, requestId: packetOf(tried), ...MAX_RETRANSMIT },
      tick(1_000),
    );
    expect(held?.message.status).toBe('queued');
    // The hold ends while the next attempt is in flight: its failure ends the text.
    now = tried.createdAt + HOUR - 1;
    attempt1(tried);
    const [failed] = tracker.onRouting({ from: HUB, requestId: packetOf(tried), ...MAX_RETRANSMIT }, tick(2));
    expect(failed?.message).toMatchObject({ status: 'failed', failureCode: 'HOLD_EXPIRED' });
    expect(failed?.message.failureReason).toBe(
      'its 1-hour hold ended: Ana (!0af52a53) was not reached in 2 attempts (last heard 3 h ago; last: MAX_RETRANSMIT) [HOLD_EXPIRED]',
    );
    // Never sent (say the radio was away): it fails when its hold ends, and not a moment before.
    expect(tracker.expireHolds(waiting.createdAt + 2 * HOUR - 1)).toEqual([]);
    const [expired] = tracker.expireHolds(waiting.createdAt + 2 * HOUR);
    expect(expired?.message).toMatchObject({ status: 'failed', failureCode: 'HOLD_EXPIRED' });
    expect(expired?.message.failureReason).toBe(
      'its 2-hour hold ended before it could be sent [HOLD_EXPIRED]',
    );
  });

  it('fails a held text at once on a reason another attempt cannot mend', () => {
    const m = queue(24);
    attempt1(m);
    const [failed] = tracker.onRouting(
      { from: HUB, requestId: packetOf(m), errorReason: 6, errorName: 'NO_CHANNEL' },
      tick(1_000),
    );
    expect(failed?.message).toMatchObject({ status: 'failed', failureCode: 'NO_CHANNEL' });
    expect(failed?.message.failureReason).toBe('the radio has no such channel [NO_CHANNEL]');
  });

  it('releases texts held since our own radio went quiet: due at once, no longer waiting for their node', () => {
    const early = queue(24, '!0000beef');
    attempt1(early);
    tracker.onRouting({ from: HUB, requestId: packetOf(early), ...MAX_RETRANSMIT }, tick(1_000));
    const quietSince = tick(60_000);
    const first = queue(24);
    const second = queue(24);
    attempt1(first);
    // Not reached while our radio was silent (the texts cannot tell): held as if its node were
    // away, and the node's second text waits behind it.
    tracker.onRouting({ from: HUB, requestId: packetOf(first), ...MAX_RETRANSMIT }, tick(1_000));
    expect(repo.getByRowId(first.rowId)?.heldSince).toBe(now);
    expect(repo.getByRowId(second.rowId)?.heldSince).toBe(now);
    // As after the quick retries: the next blind attempts are 10 min away.
    db.prepare('UPDATE messages SET next_attempt_at = ? WHERE id IN (?, ?)').run(
      now + 600_000,
      first.rowId,
      early.rowId,
    );
    expect(repo.nextDue(now)).toBeUndefined();
    // The radio answers again: what was held since it went quiet is due now; what was held
    // before (a node really away) still waits for its node.
    expect(repo.releaseHeldSince(quietSince, tick(1_000))).toBe(2);
    expect(repo.getByRowId(first.rowId)).toMatchObject({ status: 'queued', heldSince: null });
    expect(repo.nextDue(now)?.rowId).toBe(first.rowId);
    expect(repo.getByRowId(early.rowId)?.heldSince).not.toBeNull();
    expect(repo.heldNodes()).toEqual(['!0000beef']);
  });

  it('keeps texts to one node in order, and a node heard again makes its held texts due', () => {
    const first = queue(24);
    const second = queue(24);
    const elsewhere = queue(24, '!0000beef');
    expect(repo.nextDue(now)?.rowId).toBe(first.rowId);
    attempt1(first);
    // While the first waits for its ACK, the node's second text waits too; another node's does not.
    expect(repo.nextDue(now)?.rowId).toBe(elsewhere.rowId);
    tracker.onRouting({ from: HUB, requestId: packetOf(first), ...MAX_RETRANSMIT }, tick(1_000));
    const failedAt = now;
    tracker.expire(now);
    // The first is held; the second waits behind it, and says so.
    expect(repo.getByRowId(second.rowId)?.heldSince).toBe(now);
    expect(repo.nextDue(now + 29_000)?.rowId).toBe(elsewhere.rowId);
    expect(repo.heldNodes()).toEqual([NODE_ID]);
    // As after the quick retries: the next blind attempt is 10 min away.
    db.prepare('UPDATE messages SET next_attempt_at = ? WHERE id = ?').run(now + 600_000, first.rowId);
    // Heard again within a minute of the failed attempt: no new attempt yet (a node we hear
    // but cannot reach must not cost an attempt per packet), but one at the end of that minute,
    // not at the slow backoff.
    expect(repo.wakeHeld(NODE_ID, tick(1_000))).toBe(1);
    expect(repo.getByRowId(first.rowId)?.nextAttemptAt).toBe(failedAt + 60_000);
    expect(repo.nextDue(now)?.rowId).toBe(elsewhere.rowId);
    // Heard again in that minute: nothing more changes.
    expect(repo.wakeHeld(NODE_ID, tick(1_000))).toBe(0);
    // The minute is over: its held text is due now (the second was due already, behind it).
    tick(60_000);
    const due = repo.nextDue(now);
    expect([first.rowId, elsewhere.rowId]).toContain(due?.rowId);
    expect(due?.rowId).not.toBe(second.rowId);
    attempt1(first);
    // Heard again while that attempt waits for its ACK: nothing changes (it goes out once).
    expect(repo.wakeHeld(NODE_ID, now)).toBe(0);
    tracker.onRouting({ from: HUB, requestId: packetOf(first), ...NONE }, tick(500));
    expect(repo.getByRowId(first.rowId)).toMatchObject({ status: 'sent', heldSince: null });
    attempt1(elsewhere);
    expect(repo.nextDue(now)?.rowId).toBe(second.rowId);
  });
});

/** Starts the message's next attempt now (packet id from its row and attempt). */
function attempt1(message: Message): number {
  return attempt(message);
}

function packetOf(message: Message): number {
  return repo.getByRowId(message.rowId)!.packetId!;
}
