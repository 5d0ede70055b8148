/** Settings of the messaging module: rate limits, airtime share, acknowledgements, retries and holds. */
import { z } from 'zod';
import { duration, int, rate } from '../config/fields.js';

/** The longest hold any hub may configure (30 days); the upstream's bound for `hold_hours`. */
export const MAX_HOLD_HOURS = 720;

export const messagingSettings = z.object({
  /** Messages one subscriber may post per window, e.g. `10/5m` (429 past it). */
  MESSAGE_RATE_PER_SUBSCRIBER: rate.prefault('10/5m'),
  /** Messages all subscribers together may post to one node per window. */
  MESSAGE_RATE_PER_NODE: rate.prefault('6/5m'),
  /** Share of airtime our texts may take: after each send the queue waits airtime × (100 / % − 1). */
  MESSAGE_AIRTIME_PERCENT: z.coerce.number().min(1).max(100).default(10),
  /** How long a sent packet waits for any acknowledgement before it is retried. */
  MESSAGE_ACK_TIMEOUT: duration.prefault('60s'),
  /** Retries after a timeout or a transient routing error (MAX_RETRANSMIT, NO_ROUTE, ...). */
  MESSAGE_MAX_RETRIES: int(0, 3).default(3),
  /** Wait before each of the quick retries. */
  MESSAGE_RETRY_DELAY: duration.prefault('30s'),
  /**
   * How long a text whose node cannot be reached stays queued, waiting for the node to be heard
   * (docs/held-texts.md); also the most a sender may ask for with `hold_hours`. 0: no holding.
   */
  MESSAGE_HOLD_HOURS: z.coerce.number().min(0).max(MAX_HOLD_HOURS).default(24),
  /** The longest wait between two attempts of a held text while its node is not heard. */
  MESSAGE_HOLD_RETRY_MAX: duration.prefault('1h'),
});
