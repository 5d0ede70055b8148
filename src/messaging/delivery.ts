/**
 * The delivery state machine of outbound texts (docs/architecture.md "Meshtastic facts", "Data flows" 2),
 * over the message repository; the gateway actor feeds it and owns the timers and the radio.
 *
 * A ROUTING_APP packet whose Data.request_id is one of our packet ids:
 * - error_reason NONE from the destination node: the real ACK → `delivered` (via `sent` if the
 *   implicit ACK was never heard, as with a direct neighbour);
 * - error_reason NONE from anyone else (our own radio heard a relay repeat it): the implicit ACK
 *   → `sent`. The firmware stops retransmitting then; no timeout applies after it;
 * - a non-zero error_reason for the current attempt: see below.
 * No acknowledgement at all within MESSAGE_ACK_TIMEOUT counts as ACK_TIMEOUT.
 *
 * Held texts (docs/held-texts.md): when the destination cannot be reached (MAX_RETRANSMIT,
 * NO_ROUTE, TIMEOUT, GOT_NAK, ACK_TIMEOUT) the text stays `queued` and waits for the node to be
 * heard (`held_since`; the gateway makes it due when any packet from the node arrives), else it is
 * tried again on a slow backoff: MESSAGE_MAX_RETRIES retries after MESSAGE_RETRY_DELAY, then
 * 5 min, 10 min, 20 min … up to MESSAGE_HOLD_RETRY_MAX. When our own radio may not send
 * (DUTY_CYCLE_LIMIT, …) it is tried again on the same backoff. It fails when its hold ends
 * (HOLD_EXPIRED), or at once on a reason that another attempt cannot mend (NO_CHANNEL,
 * PKI_FAILED, …). A text without a hold (hold_hours 0) fails after the retries, as before.
 * A late real ACK still wins (`failed` → `delivered`): the node did get it.
 */
import { durationAdjective, durationWords } from '../domain/duration.js';
import { nodeNumFromId } from '../domain/node.js';
import { heardButNotAcknowledging } from '../domain/reachability.js';
import { exponentialDelay } from '../kernel/backoff.js';
import {
  ACK_TIMEOUT_CODE,
  describeAckTimeout,
  describeRoutingError,
  HOLD_EXPIRED_CODE,
  isTransientRoutingError,
  isUnreachable,
  NO_RESPONSE_CODE,
} from './delivery-failures.js';
import { hasHold, type Message, type MessageChange } from './message.js';
import type { MessageRepository } from './message-repository.js';

export interface DeliverySettings {
  ackTimeoutMs: number;
  /** Quick retries after MESSAGE_RETRY_DELAY (0–3); without a hold, the only ones. */
  maxRetries: number;
  retryDelayMs: number;
  /** The longest wait between two attempts of a held text that nobody heard from (MESSAGE_HOLD_RETRY_MAX). */
  holdRetryMaxMs: number;
}

/** The first wait of the slow backoff, after the quick retries; it doubles up to holdRetryMaxMs. */
export const HOLD_FIRST_RETRY_MS = 5 * 60_000;

export interface RoutingReport {
  from: number;
  requestId: number;
  errorReason: number;
  errorName: string;
}

/** What the hub knows of a node, for the words of a reason. */
export interface NodeFacts {
  /** Long name, else short name, else the node id. */
  name: string;
  /** When the hub last heard it (ms); undefined when never. */
  lastHeardAt?: number;
}

export type NodeLookup = (nodeId: string) => NodeFacts;

const byId: NodeLookup = (nodeId) => ({ name: nodeId });

/** `last heard 3 h ago` / `never heard`. */
export function lastHeardWords(facts: NodeFacts, now: number): string {
  return facts.lastHeardAt === undefined
    ? 'never heard'
    : `last heard ${durationWords(Math.max(0, now - facts.lastHeardAt))} ago`;
}

export class DeliveryTracker {
  constructor(
    private readonly repo: MessageRepository,
    private readonly settings: DeliverySettings,
    private readonly nodes: NodeLookup = byId,
  ) {}

  get ackTimeoutMs(): number {
    return this.settings.ackTimeoutMs;
  }

  /** Applies an ACK/NAK; returns the changes to publish (none when the packet is not ours). */
  onRouting(report: RoutingReport, at: number): MessageChange[] {
    const found = this.repo.byPacketId(report.requestId);
    if (!found) return [];
    const { message, attempt } = found;
    const fromDestination = report.from >>> 0 === nodeNumFromId(message.nodeId);
    if (report.errorReason === 0) {
      return fromDestination ? this.delivered(message, at) : this.sent(message, at);
    }
    // The node's own radio took it; only no app there answered: it got there.
    if (fromDestination && report.errorName === NO_RESPONSE_CODE)
      return this.delivered(message, at, describeRoutingError(NO_RESPONSE_CODE));
    // A NAK for an attempt we already replaced, or for a finished message, changes nothing.
    if (attempt !== message.attempts || message.status === 'delivered' || message.status === 'failed')
      return [];
    return [this.failOrRetry(message, report.errorName, describeRoutingError(report.errorName), at)];
  }

  /** Attempts whose ACK deadline has passed: retry or fail each. */
  expire(now: number): MessageChange[] {
    const changes: MessageChange[] = [];
    for (const message of this.repo.expiredInFlight(now)) {
      const reason = describeAckTimeout(this.settings.ackTimeoutMs, message.attempts);
      changes.push(this.failOrRetry(message, ACK_TIMEOUT_CODE, reason, now, true));
    }
    return changes;
  }

  /** Queued texts whose hold has ended (not while an attempt waits for its ACK): each fails. */
  expireHolds(now: number): MessageChange[] {
    return this.repo.holdEnded(now).map((message) => {
      const last = this.repo.history(message.rowId).findLast((t) => t.code);
      const hold = durationAdjective((message.holdUntil ?? now) - message.createdAt);
      const node = this.nodes(message.nodeId);
      const reason =
        message.attempts === 0
          ? `its ${hold} hold ended before it could be sent [${HOLD_EXPIRED_CODE}]`
          : `its ${hold} hold ended: ${node.name} was not reached in ${message.attempts} attempt${message.attempts === 1 ? '' : 's'} (${lastHeardWords(node, now)}${last?.code ? `; last: ${last.code}` : ''}) [${HOLD_EXPIRED_CODE}]`;
      const next = this.repo.update(message, {
        status: 'failed',
        failureCode: HOLD_EXPIRED_CODE,
        reason,
        code: HOLD_EXPIRED_CODE,
        ackDeadline: null,
        at: now,
      });
      return { message: next, kind: 'status', previousStatus: message.status };
    });
  }

  /** How long to wait before retry number `retry` (1, 2, …) of a text nobody heard from. */
  retryDelayMs(retry: number): number {
    const { maxRetries, retryDelayMs, holdRetryMaxMs } = this.settings;
    if (retry <= maxRetries) return retryDelayMs;
    const slow = exponentialDelay(Math.min(20, retry - maxRetries - 1), HOLD_FIRST_RETRY_MS, holdRetryMaxMs);
    return Math.max(retryDelayMs, slow);
  }

  private sent(message: Message, at: number): MessageChange[] {
    if (message.status !== 'queued') return [];
    const next = this.repo.update(message, {
      status: 'sent',
      reason: 'a relay was heard repeating it (implicit acknowledgement)',
      ackDeadline: null,
      at,
    });
    return [{ message: next, kind: 'status', previousStatus: message.status }];
  }

  /** `reason`: why it counts as delivered when the node did not simply acknowledge it. */
  private delivered(message: Message, at: number, reason?: string): MessageChange[] {
    if (message.status === 'delivered') return [];
    const changes: MessageChange[] = [];
    let current = message;
    if (current.status === 'queued') {
      current = this.repo.update(current, {
        status: 'sent',
        reason: 'sent directly to the node',
        ackDeadline: null,
        at,
      });
      changes.push({ message: current, kind: 'status', previousStatus: 'queued' });
    }
    const previousStatus = current.status;
    current = this.repo.update(current, {
      status: 'delivered',
      reason:
        reason ??
        (previousStatus === 'failed' ? 'the node acknowledged it after all' : 'the node acknowledged it'),
      failureCode: null,
      ackDeadline: null,
      at,
    });
    changes.push({ message: current, kind: 'status', previousStatus });
    return changes;
  }

  private failOrRetry(
    message: Message,
    code: string,
    description: string,
    at: number,
    timeout = false,
  ): MessageChange {
    const retriesUsed = message.attempts - 1;
    const transient = timeout || isTransientRoutingError(code);
    const quick = retriesUsed < this.settings.maxRetries;
    const holdUntil = hasHold(message) ? message.holdUntil! : null;
    const held = holdUntil !== null && at < holdUntil;
    const why = timeout
      ? `no acknowledgement within ${Math.round(this.settings.ackTimeoutMs / 1000)} s`
      : description;
    // With a hold, it is the hold that ends the waiting; without, the number of retries.
    if (transient && (holdUntil === null ? quick : held)) {
      const delayMs = this.retryDelayMs(retriesUsed + 1);
      const unreachable = isUnreachable(code);
      let reason: string;
      if (holdUntil === null) {
        reason = `${why}; retry ${retriesUsed + 1} of ${this.settings.maxRetries} in ${Math.round(delayMs / 1000)} s`;
      } else if (unreachable) {
        const node = this.nodes(message.nodeId);
        const cause = timeout ? `${why} [${ACK_TIMEOUT_CODE}]` : why;
        reason = heardButNotAcknowledging(node.lastHeardAt, message.createdAt, at)
          ? `${cause}; ${node.name} was heard ${durationWords(Math.max(0, at - node.lastHeardAt!))} ago but is not acknowledging: trying again when it is next heard, at the latest in ${durationWords(delayMs)}`
          : `${cause}; waiting for ${node.name} to come in range (${lastHeardWords(node, at)}): sent again as soon as it is heard, at the latest in ${durationWords(delayMs)}`;
      } else {
        reason = `${why}; sent again in ${durationWords(delayMs)}`;
      }
      const next = this.repo.update(message, {
        status: 'queued',
        reason,
        code,
        attempt: message.attempts,
        ackDeadline: null,
        nextAttemptAt: at + delayMs,
        ...(unreachable && holdUntil !== null ? { heldSince: message.heldSince ?? at } : {}),
        at,
      });
      // Later texts to the node wait behind this one: say so to their senders too.
      if (unreachable && holdUntil !== null) this.repo.holdFollowers(next, next.heldSince ?? at);
      return message.status === 'queued'
        ? { message: next, kind: 'retry', previousStatus: 'queued' }
        : { message: next, kind: 'status', previousStatus: message.status };
    }
    let failureCode = code;
    let reason =
      !timeout && message.attempts > 1 ? `${description}, after ${message.attempts} attempts` : description;
    if (transient && holdUntil !== null) {
      // Transient, but the hold is over: the hold's end is why it fails.
      failureCode = HOLD_EXPIRED_CODE;
      const node = this.nodes(message.nodeId);
      reason = `its ${durationAdjective(holdUntil - message.createdAt)} hold ended: ${node.name} was not reached in ${message.attempts} attempt${message.attempts === 1 ? '' : 's'} (${lastHeardWords(node, at)}; last: ${code}) [${HOLD_EXPIRED_CODE}]`;
    }
    const next = this.repo.update(message, {
      status: 'failed',
      failureCode,
      reason,
      code: failureCode,
      attempt: message.attempts,
      ackDeadline: null,
      at,
    });
    return { message: next, kind: 'status', previousStatus: message.status };
  }
}
