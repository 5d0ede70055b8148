/**
 * The delivery state machine of outbound texts (DESIGN.md "Meshtastic facts", "Data flows" 2),
 * over the message repository; the gateway actor feeds it and owns the timers and the radio.
 *
 * A ROUTING_APP packet whose Data.request_id is one of our packet ids:
 * - error_reason NONE from the destination node: the real ACK → `delivered` (via `sent` if the
 *   implicit ACK was never heard, as with a direct neighbour);
 * - error_reason NONE from anyone else (our own radio heard a relay repeat it): the implicit ACK
 *   → `sent`. The firmware stops retransmitting then; no timeout applies after it;
 * - a non-zero error_reason for the current attempt: a transient reason is retried after
 *   MESSAGE_RETRY_DELAY while attempts remain, anything else → `failed` with the reason.
 * No acknowledgement at all within MESSAGE_ACK_TIMEOUT: retried the same way, then `failed`.
 * A late real ACK still wins (`failed` → `delivered`): the node did get it.
 */
import { nodeNumFromId } from '../mesh/node.js';
import {
  ACK_TIMEOUT_CODE,
  describeAckTimeout,
  describeRoutingError,
  isTransientRoutingError,
} from './delivery-failures.js';
import type { Message, MessageChange } from './message.js';
import type { MessageRepository } from './message-repository.js';

export interface DeliverySettings {
  ackTimeoutMs: number;
  /** Attempts after the first (0–3). */
  maxRetries: number;
  retryDelayMs: number;
}

export interface RoutingReport {
  from: number;
  requestId: number;
  errorReason: number;
  errorName: string;
}

export class DeliveryTracker {
  constructor(
    private readonly repo: MessageRepository,
    private readonly settings: DeliverySettings,
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

  private delivered(message: Message, at: number): MessageChange[] {
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
      reason: previousStatus === 'failed' ? 'the node acknowledged it after all' : 'the node acknowledged it',
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
    if (transient && retriesUsed < this.settings.maxRetries) {
      const delayS = Math.round(this.settings.retryDelayMs / 1000);
      const why = timeout
        ? `no acknowledgement within ${Math.round(this.settings.ackTimeoutMs / 1000)} s`
        : description;
      const next = this.repo.update(message, {
        status: 'queued',
        reason: `${why}; retry ${retriesUsed + 1} of ${this.settings.maxRetries} in ${delayS} s`,
        ackDeadline: null,
        nextAttemptAt: at + this.settings.retryDelayMs,
        at,
      });
      return message.status === 'queued'
        ? { message: next, kind: 'retry', previousStatus: 'queued' }
        : { message: next, kind: 'status', previousStatus: message.status };
    }
    const reason =
      !timeout && message.attempts > 1 ? `${description}, after ${message.attempts} attempts` : description;
    const next = this.repo.update(message, {
      status: 'failed',
      failureCode: code,
      reason,
      ackDeadline: null,
      at,
    });
    return { message: next, kind: 'status', previousStatus: message.status };
  }
}
