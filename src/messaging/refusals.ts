/**
 * The problems POST /api/v1/messages refuses a send with: the 404 of an unknown node, the 429 of
 * a rate limit and the 403 of a send no subscription allows (with the lapsed wording). The
 * routes (routes.ts) serve the hub and the upstream, so both say the same.
 */
import { ProblemError } from '../http/problem.js';
import type { RateLimit } from '../kernel/rate-limit.js';
import type { Subscription } from './subscription-repository.js';

/** The subscription that would have covered the node had it not expired. */
export type LapsedSubscription = Pick<Subscription, 'expiresAt' | 'source' | 'reference'>;

/** The 404 of a text to a node nobody (`this hub`, `any site`) has heard of. */
export function nodeUnknown(nodeId: string, knownTo: string): ProblemError {
  return new ProblemError(404, `no node ${nodeId} is known to ${knownTo}`);
}

/** The 429: who is limited (`you may send`, `!a1b2c3d4 may receive`), the limit, and Retry-After. */
export function rateProblem(limit: RateLimit, who: string, retryAfterSeconds: number): ProblemError {
  const { count, windowMs } = limit;
  return new ProblemError(
    429,
    `rate limit exceeded: ${who} at most ${count} messages per ${windowText(windowMs)}; retry in ${retryAfterSeconds} s`,
    { headers: { 'retry-after': String(retryAfterSeconds) } },
  );
}

function windowText(ms: number): string {
  if (ms % 86_400_000 === 0) return `${ms / 86_400_000} d`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${Math.round(ms / 1000)} s`;
}

/**
 * The 403 for a send no subscription allows; when one `lapsed`, it says when it ended and how
 * to renew it.
 */
export function subscriptionRefusal(target: string, lapsed: LapsedSubscription | undefined): ProblemError {
  if (!lapsed) return new ProblemError(403, `your subscription does not allow messaging ${target}`);
  const ended = new Date(lapsed.expiresAt!).toISOString();
  const paid = lapsed.source === 'billing' && lapsed.reference !== null;
  const how = paid
    ? `renew it with POST /api/v1/billing/subscriptions/${lapsed.reference}/renew and pay the invoice`
    : 'ask the hub operator to renew it';
  return new ProblemError(403, `your subscription lapsed at ${ended}; ${how}`, {
    type: 'urn:meshhub:problem:subscription-lapsed',
    lapsed_at: ended,
    ...(paid
      ? {
          billing_subscription_id: lapsed.reference,
          renew: `/api/v1/billing/subscriptions/${lapsed.reference}/renew`,
        }
      : {}),
  });
}

/** The 422 for an Idempotency-Key used before with another request body. */
export function idempotencyKeyReused(): ProblemError {
  return new ProblemError(422, 'this Idempotency-Key was used with a different request body', {
    errors: [{ field: 'Idempotency-Key', message: 'already used for another message' }],
  });
}
