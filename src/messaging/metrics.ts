/**
 * Messaging in /metrics (README "Metrics"): each status a text reaches, retries, failures by
 * reason, the time from POST to the destination's acknowledgement, and the send queue's depth
 * (read from SQLite at scrape time: the `queued` rows are the queue).
 */
import type { HubBus } from '../domain/events.js';
import type { HubMetrics } from '../metrics.js';
import type { Database } from '../store/database.js';

export function watchMessageMetrics(options: {
  bus: HubBus;
  metrics: HubMetrics;
  db: Database;
  /** Owner of the listener: removed with its owner. */
  owner: string;
}): () => void {
  const { bus, metrics, owner } = options;
  bus.on(owner, 'message.updated', ({ message, kind }) => {
    // Back to `queued` (after a NAK or a timeout, from `queued` or `sent`): another attempt.
    if (kind === 'retry' || (kind === 'status' && message.status === 'queued')) {
      metrics.messageRetries.inc();
      return;
    }
    metrics.messages.inc({ direction: message.direction, status: message.status });
    if (kind !== 'status') return;
    if (message.status === 'failed')
      metrics.messageFailures.inc({ reason: message.failureCode ?? 'unknown' });
    if (message.status === 'delivered')
      metrics.messageDeliverySeconds.observe(Math.max(0, message.updatedAt - message.createdAt) / 1000);
  });
  const stopRender = metrics.onRender(() => {
    try {
      const queued = options.db
        .prepare("SELECT count(*) FROM messages WHERE direction = 'outbound' AND status = 'queued'")
        .pluck()
        .get() as number;
      metrics.messagesQueued.set(queued);
    } catch {
      // The store is closed (the hub is stopping): keep the last value.
    }
  });
  return () => {
    bus.removeOwner(owner);
    stopRender();
  };
}
