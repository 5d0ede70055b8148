/**
 * `POST /api/v1/ingest/readings` — the spec's ingestion component (port 8001), for sensors that
 * speak HTTP rather than MQTT. The body is one Reading or an array of up to 10 000 (validated
 * exactly as the MQTT topic `meshhub/ingest/readings`, see reading-input.ts). Bearer JWT with the
 * `ingest` or `admin` role.
 *
 * Answers (README "Ingesting readings"):
 * - 202 `{ accepted, rejected, rejected_by_reason, errors }` once the accepted readings are
 *   committed; rejected items are listed in `errors`, the accepted ones are stored regardless;
 * - 422 problem details when every item is rejected (nothing stored), `errors` naming each;
 * - 400 malformed JSON or an empty batch; 413 more than 10 000 readings or 8 MiB; 415 not JSON;
 * - 401 no or a bad token (`WWW-Authenticate: Bearer`), 403 a token without the role;
 * - 503 with `Retry-After` when the store cannot commit (the readings may be resent as they are:
 *   readings are idempotent on node and timestamp).
 */
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { AuthError, bearerToken, type TokenVerifier, type VerifiedIdentity } from '../auth/jwt-verifier.js';
import type { ReadingSource } from '../domain/events.js';
import { AUTH_PROBLEMS, COMMON_PROBLEMS, HEADERS, problem } from '../http/openapi.js';
import { describeRoutes } from '../http/openapi-route.js';
import { ProblemError } from '../http/problem.js';
import type { Logger } from '../log.js';
import { isStorageFull, STORAGE_FULL_DETAIL } from '../store/storage-full.js';
import {
  MAX_READINGS_PER_BATCH,
  payloadItems,
  type ReadingRejectReason,
  validateReadings,
} from './reading-input.js';
import type { ReadingSink } from './reading-sink.js';
import { ingestBodySchema, ingestRejectedSchema, ingestResultSchema } from './schemas.js';

export const MAX_READINGS_PER_REQUEST = MAX_READINGS_PER_BATCH;
export const MAX_INGEST_BODY_BYTES = 8 * 1024 * 1024;
/** Roles that may ingest readings over HTTP. */
export const INGEST_ROLES: readonly string[] = ['ingest', 'admin'];

export interface IngestRoutesOptions {
  sink: ReadingSink;
  verifier: TokenVerifier;
  log?: Logger;
  now?: () => number;
  /** Counts rejected readings (metrics). */
  onRejected?: (source: ReadingSource, reason: ReadingRejectReason, count: number) => void;
}

const REALM = 'Bearer realm="meshhub"';

function unauthorized(detail: string, error?: string): ProblemError {
  const challenge = error ? `${REALM}, error="${error}", error_description="${detail}"` : REALM;
  return new ProblemError(401, detail, { headers: { 'www-authenticate': challenge } });
}

/**
 * Remembers tokens that verified, until their `exp`: a sensor sends the same token with every
 * batch, and an ES256 signature check costs more than validating a small batch. Keyed by the
 * whole token, so only the exact bytes that were verified are ever taken from the cache.
 */
export function rememberVerifiedTokens(verifier: TokenVerifier, max = 256, now = Date.now): TokenVerifier {
  const cache = new Map<string, VerifiedIdentity>();
  return {
    async verify(token) {
      const hit = cache.get(token);
      const exp = hit?.claims.exp;
      if (hit && exp !== undefined && exp * 1000 > now()) return hit;
      if (hit) cache.delete(token);
      const identity = await verifier.verify(token);
      cache.set(token, identity);
      if (cache.size > max) cache.delete(cache.keys().next().value as string);
      return identity;
    },
  };
}

const tooLarge = (headers?: Record<string, string>) =>
  new ProblemError(413, `the body is larger than ${MAX_INGEST_BODY_BYTES} bytes`, headers ? { headers } : {});
const chunkedLimit = bodyLimit({
  maxSize: MAX_INGEST_BODY_BYTES,
  // The rest of a chunked body is never read: the connection cannot carry another request.
  onError: () => {
    throw tooLarge({ connection: 'close' });
  },
});

/** `releaseIngest`: the request has handed its readings over (others may stop deferring to it). */
type IngestEnv = { Variables: { releaseIngest: () => void } };

/** The OpenAPI operations of the routes below (src/http/openapi-route.ts). */
export const ingestOperations = describeRoutes('/api/v1/ingest', [
  {
    method: 'post',
    path: '/readings',
    operationId: 'ingestReadings',
    tag: 'ingest',
    summary: 'Store readings from a sensor (role ingest or admin)',
    description:
      'The same validation as the MQTT topic `meshhub/ingest/readings`. Answered once the accepted readings are committed; readings are idempotent on node and timestamp, so a batch may be resent as it is.',
    security: 'bearer',
    body: { schema: ingestBodySchema },
    responses: {
      202: {
        description: 'Committed; rejected readings are listed in `errors`.',
        body: ingestResultSchema,
      },
      400: problem('Malformed JSON, or an empty batch.'),
      401: AUTH_PROBLEMS.unauthorized,
      403: AUTH_PROBLEMS.noRole,
      413: problem('More than 10000 readings, or a body over 8 MiB.'),
      415: COMMON_PROBLEMS.notJson,
      422: {
        description: 'Every reading was rejected; nothing was stored.',
        body: ingestRejectedSchema,
        contentType: 'application/problem+json',
      },
      503: problem('The store cannot commit: send the readings again later.', {
        'Retry-After': HEADERS.retryAfter,
      }),
    },
  },
]);

export function ingestRoutes(options: IngestRoutesOptions): Hono<IngestEnv> {
  const app = new Hono<IngestEnv>();
  const now = options.now ?? Date.now;
  const verifier = rememberVerifiedTokens(options.verifier, 256, now);
  // Requests whose bodies are still being received: while there are some, a request's readings
  // wait for theirs, so concurrent batches are committed in one transaction (group commit).
  let receiving = 0;

  app.post(
    '/readings',
    async function requireIngestRole(c, next) {
      const token = bearerToken(c.req.header('authorization'));
      if (!token) throw unauthorized('a bearer token with the ingest role is required');
      try {
        const identity = await verifier.verify(token);
        if (!identity.roles.some((r) => INGEST_ROLES.includes(r))) {
          throw new ProblemError(403, 'the token does not carry the ingest role', {
            headers: { 'www-authenticate': `${REALM}, error="insufficient_scope"` },
          });
        }
      } catch (error) {
        if (error instanceof AuthError) throw unauthorized(error.message, 'invalid_token');
        throw error;
      }
      await next();
    },
    async function limitBody(c, next) {
      // A declared length is checked up front, leaving the body to the server's fast buffered
      // read; only a chunked body (no length) is counted as it streams in.
      const declared = c.req.header('content-length');
      if (declared === undefined) return chunkedLimit(c, next);
      if (!(Number(declared) <= MAX_INGEST_BODY_BYTES)) throw tooLarge();
      await next();
    },
    async function receiveReadings(c, next) {
      receiving++;
      let released = false;
      c.set('releaseIngest', () => {
        if (released) return;
        released = true;
        receiving--;
      });
      try {
        await next();
      } finally {
        if (!released) {
          released = true;
          receiving--;
          // This request submitted nothing: do not keep deferred readings of others waiting.
          if (receiving === 0) options.sink.commitSoon?.();
        }
      }
    },
    async (c) => {
      const type = c.req.header('content-type') ?? '';
      if (!/^application\/([a-z.+-]*\+)?json\s*(;|$)/i.test(type)) {
        throw new ProblemError(415, 'send the readings as application/json');
      }
      const text = await c.req.text();
      let payload: unknown;
      try {
        payload = JSON.parse(text);
      } catch {
        throw new ProblemError(400, 'the request body is not valid JSON');
      }
      const { items, array } = payloadItems(payload);
      if (items.length === 0) {
        throw new ProblemError(400, 'the batch is empty', {
          errors: [{ field: '(body)', message: 'send one reading or an array of 1 to 10000 readings' }],
        });
      }
      if (items.length > MAX_READINGS_PER_REQUEST) {
        throw new ProblemError(413, `at most ${MAX_READINGS_PER_REQUEST} readings per request`, {
          errors: [{ field: '(body)', message: `the batch holds ${items.length} readings` }],
        });
      }

      const result = validateReadings(items, { nowMs: now(), array });
      for (const [reason, count] of Object.entries(result.rejectedByReason)) {
        options.onRejected?.('http', reason as ReadingRejectReason, count);
      }
      const errors = result.problems.map(({ field, message, reason, index }) => ({
        field,
        message,
        reason,
        index,
      }));
      const counts = {
        accepted: result.accepted,
        rejected: result.rejected,
        rejected_by_reason: result.rejectedByReason,
        ...(result.problemsTruncated ? { errors_truncated: true } : {}),
      };
      if (result.accepted === 0) {
        throw new ProblemError(422, `all ${result.rejected} readings were rejected`, { errors, ...counts });
      }
      try {
        c.get('releaseIngest')();
        await options.sink.submit(result.readings, 'http', { defer: receiving > 0 });
      } catch (error) {
        options.log?.error(
          { err: error, readings: result.accepted },
          'ingested readings could not be committed',
        );
        if (isStorageFull(error))
          throw new ProblemError(507, STORAGE_FULL_DETAIL, { headers: { 'retry-after': '60' } });
        throw new ProblemError(503, 'the readings could not be stored; send them again later', {
          headers: { 'retry-after': '5' },
        });
      }
      return c.json({ ...counts, errors }, 202);
    },
  );
  return app;
}
