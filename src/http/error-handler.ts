/**
 * The one place errors become responses (docs/architecture.md "Decisions": errors): a ProblemError keeps its status
 * and detail; Hono's HTTPException keeps its status with a generic detail; anything else is a
 * generic 500 whose detail never leaks internals (the log has them, keyed by request id).
 */
import type { Context, ErrorHandler, NotFoundHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { Logger } from '../log.js';
import { isStorageFull, STORAGE_FULL_DETAIL } from '../store/storage-full.js';
import { ProblemError, problemTitle } from './problem.js';

export function problemResponse(c: Context, problem: ProblemError): Response {
  const requestId = c.get('requestId') as string | undefined;
  const headers: Record<string, string> = {
    'content-type': 'application/problem+json',
    ...problem.extras.headers,
  };
  return new Response(JSON.stringify(problem.toBody(requestId)), { status: problem.status, headers });
}

export function createErrorHandler(log?: Logger): ErrorHandler {
  return function onError(err, c) {
    if (err instanceof ProblemError) return problemResponse(c, err);
    if (err instanceof HTTPException) {
      const status = err.status;
      // Malformed JSON bodies and the like surface as HTTPException 400 from Hono's body parsers.
      const detail =
        status < 500 ? err.message || problemTitle(status) : 'the server could not complete the request';
      return problemResponse(c, new ProblemError(status, detail));
    }
    // c.req.json() on a malformed body throws a SyntaxError: the client's fault, not ours.
    if (err instanceof SyntaxError)
      return problemResponse(c, new ProblemError(400, 'the request body is not valid JSON'));
    // A write that found the disk full changed nothing: the client may send it again later.
    if (isStorageFull(err)) {
      log?.error({ err, path: c.req.path, requestId: c.get('requestId') }, 'the disk is full');
      return problemResponse(
        c,
        new ProblemError(507, STORAGE_FULL_DETAIL, { headers: { 'retry-after': '60' } }),
      );
    }
    log?.error({ err, path: c.req.path, requestId: c.get('requestId') }, 'unhandled error');
    return problemResponse(c, new ProblemError(500, 'the server could not complete the request'));
  };
}

export const notFound: NotFoundHandler = (c) =>
  problemResponse(c, new ProblemError(404, `no route for ${c.req.method} ${c.req.path}`));
