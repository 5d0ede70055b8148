/**
 * The sync endpoints the sites call (docs/sync.md "Push"), mounted at SYNC_API:
 * - `GET /ping`: the online probe; answers the site's cursor as the upstream knows it and the
 *   upstream's clock (pingAnswerSchema);
 * - `POST /batches`: one gzip'd batch (batchSchema); 200 batchAckSchema once it is applied (or
 *   was before: `duplicate: true`).
 *
 * Every request carries a site request token (sync/signing.ts). Each refusal is an RFC 9457
 * problem with `type` `urn:meshhub:sync:<reason>` and the same `reason` as a member, and nothing
 * of a refused batch is applied (issue 12 "Bad input and faults"):
 * 401 `unknown_site` (no such site, or the signature does not verify) or `bad_token` (expired,
 * another request's token, a body it does not sign); 403 `revoked_site`, `site_mismatch`;
 * 409 `gap`, `sequence_backwards`, `replayed_request` (with `expected_seq`); 415 `bad_batch`
 * (not gzip); 413 `too_large` (over MAX_BATCH_BYTES as sent, counted while it streams in, or
 * over MAX_BATCH_INFLATED_BYTES once inflated, which stops inflating there); 400 `bad_batch`
 * (not gzip data, not JSON, not the schema: `errors` names the fields). The schema bounds every
 * value the upstream stores in a narrower column (counts and sequence numbers in INTEGER
 * columns), so a batch it accepts can be stored; should PostgreSQL still refuse a value (a
 * data exception), that is a 400 `bad_batch` too, never a 500 the site would retry forever.
 * Problems carry `server_time`, so a site whose clock is off learns the upstream's even from a
 * refusal. A database that is away is a 503 with Retry-After, never a 500.
 *
 * A batch applied (or found applied) records the site's contact in its own transaction; a ping
 * or a refused batch records it on its own.
 */
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { type Context, Hono } from 'hono';
import { decodeJwt } from 'jose';
import { bearerToken } from '../../../src/auth/jwt-verifier.js';
import { createErrorHandler, problemResponse } from '../../../src/http/error-handler.js';
import { HEADERS, type OperationSpec, problem } from '../../../src/http/openapi.js';
import { describeRoutes } from '../../../src/http/openapi-route.js';
import { ProblemError } from '../../../src/http/problem.js';
import type { Logger } from '../../../src/log.js';
import {
  type BatchAck,
  batchAckSchema,
  batchSchema,
  MAX_BATCH_BYTES,
  MAX_BATCH_INFLATED_BYTES,
  type PingAnswer,
  pingAnswerSchema,
  SYNC_API,
  type SyncRefusal,
} from '../../protocol.js';
import {
  bodyHash,
  claimedSiteId,
  SiteAuthError,
  type VerifiedSiteRequest,
  verifySiteRequest,
} from '../../signing.js';
import type { ApplyOutcome, BatchApplier, BatchTicket } from '../batch-apply.js';
import { isTransientDatabaseError } from '../db/pool.js';
import type { SiteRegistry } from '../sites.js';

const inflate = promisify(gunzip);

export interface SyncRoutesDeps {
  sites: SiteRegistry;
  applier: BatchApplier;
  now?: () => number;
  log?: Logger;
}

type Reason = SyncRefusal;

export const SYNC_PROBLEM_PREFIX = 'urn:meshhub:sync:';

const siteTokenProblems = {
  401: problem(
    '`unknown_site` or `bad_token`: the site request token does not verify (`type` `urn:meshhub:sync:<reason>`).',
    { 'WWW-Authenticate': HEADERS.wwwAuthenticate },
  ),
  403: problem('`revoked_site` or `site_mismatch`.'),
  503: problem('The database is not answering.', { 'Retry-After': HEADERS.retryAfter }),
};

/** The OpenAPI operations of the routes below (src/http/openapi-route.ts): the sites' side of docs/sync.md. */
export const syncOperations: OperationSpec[] = describeRoutes(SYNC_API, [
  {
    method: 'get',
    path: '/ping',
    operationId: 'syncPing',
    tag: 'sync',
    summary: 'The sites’ online probe: the site’s cursor as the upstream knows it, and the upstream’s clock',
    security: 'bearer',
    responses: { 200: { description: 'The cursor.', body: pingAnswerSchema }, ...siteTokenProblems },
  },
  {
    method: 'post',
    path: '/batches',
    operationId: 'syncPushBatch',
    tag: 'sync',
    summary: 'One batch of a site’s records, gzip’d (Content-Encoding: gzip), signed by the site',
    security: 'bearer',
    body: { schema: batchSchema, description: 'The batch as JSON, sent gzip’d.' },
    responses: {
      200: { description: 'Applied, or applied before (`duplicate: true`).', body: batchAckSchema },
      400: problem('`bad_batch`: not gzip data, not JSON or not the schema; `errors` names the fields.'),
      409: problem('`gap`, `sequence_backwards` or `replayed_request`, with `expected_seq`.'),
      413: problem('`too_large`: over the batch size limits as sent or inflated.'),
      415: problem('`bad_batch`: not gzip.'),
      ...siteTokenProblems,
    },
  },
]);
const REALM = 'Bearer realm="meshhub-upstream"';

/** SQLSTATE class 22, data exception: a value out of range or not storable. */
const DATA_EXCEPTION_CLASS = '22';

/** Retry-After of a 503 while the database is away. */
const RETRY_AFTER_S = 5;

export function syncRoutes(deps: SyncRoutesDeps): Hono {
  const { sites, applier, log } = deps;
  const now = deps.now ?? Date.now;
  const app = new Hono();

  const refuse = (status: number, reason: Reason, detail: string, extras: Record<string, unknown> = {}) =>
    new ProblemError(status, detail, {
      type: `${SYNC_PROBLEM_PREFIX}${reason}`,
      reason,
      server_time: now(),
      ...(status === 401 ? { headers: { 'www-authenticate': REALM } } : {}),
      ...extras,
    });

  /** Verifies the request token (without the body); throws the refusal. */
  async function authenticate(authorization: string | undefined, method: string, path: string) {
    const token = bearerToken(authorization);
    if (!token) throw refuse(401, 'unknown_site', 'a site request token (Authorization: Bearer) is required');
    const siteId = claimedSiteId(token);
    try {
      const keys = siteId === undefined ? undefined : await sites.keysFor(siteId);
      const verified = await verifySiteRequest(token, keys, { method, path, nowMs: now() });
      return { token, verified };
    } catch (error) {
      if (!(error instanceof SiteAuthError)) throw error;
      log?.info({ siteId, reason: error.reason, path }, `sync request refused: ${error.message}`);
      if (error.reason === 'revoked_site') throw refuse(403, 'revoked_site', error.message);
      throw refuse(401, error.reason, error.message);
    }
  }

  app.get('/ping', async (c) => {
    const { verified } = await authenticate(c.req.header('authorization'), 'GET', `${SYNC_API}/ping`);
    await sites.touch(verified.siteId);
    const site = await sites.get(verified.siteId);
    const answer: PingAnswer = {
      site_id: verified.siteId,
      acked_seq: site?.ackedSeq ?? 0,
      server_time: now(),
    };
    return c.json(answer);
  });

  app.post('/batches', async (c) => {
    const { token, verified } = await authenticate(
      c.req.header('authorization'),
      'POST',
      `${SYNC_API}/batches`,
    );
    const siteId = verified.siteId;
    // From here on, a later batch of this site that finds a gap waits for this one to be done.
    const ticket = applier.arrived(siteId);
    try {
      return await receiveBatch(c, siteId, token, verified, ticket);
    } finally {
      ticket.end();
    }
  });

  async function receiveBatch(
    c: Context,
    siteId: string,
    token: string,
    verified: VerifiedSiteRequest,
    ticket: BatchTicket,
  ): Promise<Response> {
    const encoding = (c.req.header('content-encoding') ?? '').trim().toLowerCase();
    if (encoding !== 'gzip') {
      throw refuse(
        415,
        'bad_batch',
        `a batch is sent gzip'd (Content-Encoding: gzip), not "${encoding || 'identity'}"`,
      );
    }
    const declared = c.req.header('content-length');
    if (declared !== undefined && Number(declared) > MAX_BATCH_BYTES) throw tooLarge(refuse, 'sent');
    const gzipped = await readBounded(c.req.raw.body, MAX_BATCH_BYTES, () => tooLarge(refuse, 'sent'));

    // The token verified; its `bsh` must sign exactly these bytes.
    if (decodeJwt(token).bsh !== bodyHash(gzipped)) {
      throw refuse(401, 'bad_token', 'the request token does not sign this body');
    }

    let inflated: Buffer;
    try {
      inflated = await inflate(gzipped, { maxOutputLength: MAX_BATCH_INFLATED_BYTES });
    } catch (error) {
      if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(refuse, 'inflated');
      throw refuse(400, 'bad_batch', 'the body is not valid gzip data');
    }
    let json: unknown;
    try {
      json = JSON.parse(inflated.toString('utf8'));
    } catch {
      throw refuse(400, 'bad_batch', 'the batch is not valid JSON');
    }
    const parsed = batchSchema.safeParse(json);
    if (!parsed.success) {
      const errors = parsed.error.issues.map((issue) => ({
        field: issue.path.map(String).join('.') || '(body)',
        message: issue.message,
      }));
      const fields = [...new Set(errors.map((e) => e.field))].slice(0, 10).join(', ');
      throw refuse(400, 'bad_batch', `invalid ${fields}`, { errors: errors.slice(0, 100) });
    }
    const batch = parsed.data;
    if (batch.site_id !== siteId) {
      throw refuse(
        403,
        'site_mismatch',
        `the batch names site ${batch.site_id}, but the token is site ${siteId}'s`,
      );
    }

    let outcome: ApplyOutcome;
    try {
      outcome = await applier.apply(
        siteId,
        batch,
        { value: verified.jti, expiresAt: verified.expiresAt },
        ticket,
      );
    } catch (error) {
      // A value the schema lets through but a column cannot hold (the schema bounds what it
      // knows of): bad input, refused whole like any other, not a server error.
      const code = (error as { code?: unknown }).code;
      if (typeof code === 'string' && code.startsWith(DATA_EXCEPTION_CLASS)) {
        log?.warn(
          { err: error, siteId, first: batch.first_seq, last: batch.last_seq },
          'a batch holds a value that cannot be stored',
        );
        throw refuse(400, 'bad_batch', `a record cannot be stored: ${(error as Error).message}`);
      }
      throw error;
    }
    if (outcome.kind === 'refused') {
      // Nothing of the batch's transaction stayed, its contact time neither.
      await sites.touch(siteId);
      log?.info(
        { siteId, reason: outcome.reason, first: batch.first_seq, last: batch.last_seq },
        outcome.detail,
      );
      switch (outcome.reason) {
        case 'unknown_site':
          throw refuse(401, 'unknown_site', outcome.detail);
        case 'revoked_site':
          throw refuse(403, 'revoked_site', outcome.detail);
        default:
          throw refuse(409, outcome.reason, outcome.detail, { expected_seq: outcome.expectedSeq });
      }
    }
    const ack: BatchAck = {
      site_id: siteId,
      acked_seq: outcome.ackedSeq,
      duplicate: outcome.kind === 'duplicate',
      server_time: now(),
    };
    return c.json(ack);
  }

  const onError = createErrorHandler(log);
  app.onError((err, c) => {
    if (isTransientDatabaseError(err)) {
      log?.warn({ err, path: c.req.path }, 'sync request failed: the database is unavailable');
      return problemResponse(
        c,
        new ProblemError(503, 'the upstream database is unavailable; retry later', {
          headers: { 'retry-after': String(RETRY_AFTER_S) },
        }),
      );
    }
    return onError(err, c);
  });
  return app;
}

function tooLarge(
  refuse: (status: number, reason: Reason, detail: string, extras?: Record<string, unknown>) => ProblemError,
  which: 'sent' | 'inflated',
): ProblemError {
  return which === 'sent'
    ? refuse(413, 'too_large', `a batch is at most ${MAX_BATCH_BYTES} bytes gzip'd`, {
        // The rest of the body is never read: the connection cannot carry another request.
        headers: { connection: 'close' },
      })
    : refuse(413, 'too_large', `a batch is at most ${MAX_BATCH_INFLATED_BYTES} bytes once inflated`);
}

/** Reads a body, counting as it streams in; stops (and throws `tooLarge()`) past `max` bytes. */
async function readBounded(
  body: ReadableStream<Uint8Array> | null,
  max: number,
  tooLarge: () => Error,
): Promise<Uint8Array> {
  if (!body) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, size);
}
