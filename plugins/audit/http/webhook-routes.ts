/**
 * `POST /api/webhooks/directory`: Microsoft Graph change notifications (spec "Events": inbound
 * notifications validated against WEBHOOK_CLIENT_SECRET).
 *
 * - Subscription validation: Graph POSTs with `?validationToken=…`; the endpoint answers 200 with
 *   the token, decoded, as text/plain, within 10 seconds.
 * - Notifications: `{ "value": [ { "clientState": …, … } ] }`. Accepted (202) only when every
 *   notification carries our client state (compared in constant time); then the directory source
 *   is fetched early. A wrong or missing client state is a 403 and changes nothing; a valid one
 *   that cannot lead to a fetch (collection not configured, directory not collected) is a 409
 *   saying which.
 * The endpoint takes no bearer token: Graph authenticates with the shared client state.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Hono } from 'hono';
import type { Secret } from '../../../src/config/secret.js';
import {
  COMMON_PROBLEMS,
  type OperationSpec,
  problem,
  type ResponseSpec,
} from '../../../src/http/openapi.js';
import { ProblemError, validationProblem } from '../../../src/http/problem.js';
import type { AuditCollectorActor } from '../collector-actor.js';
import { type AuditEnv, fieldProblem, jsonBody } from './context.js';
import { bodyTooLarge } from './events-routes.js';
import { notificationsBodySchema, webhookQuerySchema } from './schemas.js';

const MAX_VALIDATION_TOKEN = 4_096;

/** Equal-length digests, so the comparison time says nothing about the secret. */
function sameSecret(given: string, secret: Secret): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(secret.reveal()).digest();
  return timingSafeEqual(a, b);
}

/** The OpenAPI operations of the Microsoft Graph webhook (the routes below); `signedIn`: the refusals of the plugin's signed-in routes. */
export function webhookOperations(signedIn: Record<number, ResponseSpec>): OperationSpec[] {
  return [
    {
      method: 'post',
      path: '/api/webhooks/directory',
      operationId: 'receiveDirectoryNotifications',
      tag: 'webhooks',
      summary: 'Microsoft Graph change notifications, checked against WEBHOOK_CLIENT_SECRET',
      description:
        'With `?validationToken=` (subscription validation) the token is answered as text/plain; otherwise every notification must carry this hub’s `clientState`, and the directory is fetched early.',
      params: { query: webhookQuerySchema },
      body: { schema: notificationsBodySchema, required: false },
      responses: {
        200: { description: 'The validation token.', contentType: 'text/plain' },
        202: { description: 'Accepted.' },
        400: COMMON_PROBLEMS.badInput,
        403: problem('A notification does not carry this hub’s client state.'),
        404: problem('The webhook is not configured (WEBHOOK_CLIENT_SECRET).'),
        409: problem(
          'A valid notification, but collection is not configured or the directory is not collected.',
        ),
        413: COMMON_PROBLEMS.tooLarge,
        415: COMMON_PROBLEMS.notJson,
        429: signedIn[429]!,
      },
    },
  ];
}

export function webhookRoutes(
  deps: { secret: Secret | undefined; collector: AuditCollectorActor; directoryCollected: boolean },
  app: Hono<AuditEnv>,
): void {
  app.post('/directory', bodyTooLarge(1024 * 1024), async (c) => {
    c.set('caller', { authenticated: false, username: 'graph-webhook', roles: [] });
    const secret = deps.secret;
    if (!secret)
      throw new ProblemError(404, 'the directory webhook is not configured (WEBHOOK_CLIENT_SECRET)');

    const token = c.req.query('validationToken');
    if (token !== undefined) {
      if (!token || token.length > MAX_VALIDATION_TOKEN) {
        throw fieldProblem('validationToken', `must be 1 to ${MAX_VALIDATION_TOKEN} characters`);
      }
      c.set('trailDetail', { action: 'webhook-validation' });
      return c.text(token, 200);
    }

    const parsed = notificationsBodySchema.safeParse(await jsonBody(c));
    if (!parsed.success) throw validationProblem(parsed.error);
    const list = parsed.data.value;
    const trusted = list.every((n) => n.clientState !== undefined && sameSecret(n.clientState, secret));
    c.set('trailDetail', { action: 'webhook-notification', notifications: list.length, accepted: trusted });
    if (!trusted) {
      throw new ProblemError(403, 'the notification does not carry this hub’s client state', {
        errors: [{ field: 'value.clientState', message: 'does not match' }],
      });
    }
    const outcome = deps.directoryCollected
      ? deps.collector.requestFetch('webhook', ['directory'])
      : 'not_collected';
    c.set('trailDetail', {
      action: 'webhook-notification',
      notifications: list.length,
      accepted: true,
      fetch: outcome,
    });
    // A valid notification that cannot lead to a fetch says why instead of a 202 (issue 14).
    if (outcome === 'not_configured') {
      throw new ProblemError(
        409,
        'collection is not configured: set AUDIT_TENANT_ID, AUDIT_CLIENT_ID and AUDIT_CLIENT_SECRET',
      );
    }
    if (outcome === 'not_collected') {
      throw new ProblemError(409, 'the directory source is not collected here (AUDIT_SOURCES)');
    }
    return c.body(null, 202);
  });
}
