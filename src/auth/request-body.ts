/**
 * Reading small request bodies safely: a size limit (413) before anything is buffered past it,
 * the media type checked (415), malformed JSON a 400. Shared by the token and messaging routes.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { z } from 'zod';
import { type FieldError, ProblemError } from '../http/problem.js';

export function limitBody(maxBytes: number): MiddlewareHandler {
  const tooLarge = () => {
    throw new ProblemError(413, `the request body must be at most ${maxBytes} bytes`);
  };
  // Without a Content-Length (chunked), count the bytes as they stream in.
  const streaming = bodyLimit({ maxSize: maxBytes, onError: tooLarge });
  return async function limitBodyMiddleware(c, next) {
    const length = c.req.header('content-length');
    if (length === undefined || c.req.header('transfer-encoding') !== undefined) return streaming(c, next);
    // Declared length: refuse before reading, and leave the body to node-server's direct read
    // (touching `c.req.raw.body` here would build a web stream for every request).
    if (Number(length) > maxBytes) tooLarge();
    await next();
  };
}

function mediaType(c: Context): string {
  return (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
}

/** The parsed JSON body; 415 unless the body is `application/json`, 400 when it does not parse. */
export async function readJsonBody(c: Context): Promise<unknown> {
  const type = mediaType(c);
  if (type !== 'application/json' && !type.endsWith('+json')) {
    throw new ProblemError(415, 'the request body must be application/json');
  }
  const text = await c.req.text();
  if (!text.trim()) throw new ProblemError(400, 'the request body is empty; a JSON object is expected');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ProblemError(400, 'the request body is not valid JSON');
  }
}

/** A JSON body or an `application/x-www-form-urlencoded` one (as OAuth clients send), as a plain object. */
export async function readJsonOrFormBody(c: Context): Promise<unknown> {
  if (mediaType(c) !== 'application/x-www-form-urlencoded') return readJsonBody(c);
  const params = new URLSearchParams(await c.req.text());
  const out: Record<string, string> = {};
  for (const [key, value] of params) {
    if (Object.hasOwn(out, key)) throw new ProblemError(400, `"${key}" is given more than once`);
    out[key] = value;
  }
  return out;
}

/** A 400 naming each bad field; an unknown field is named itself ("is not a known field"). */
export function bodyProblem(error: z.ZodError): ProblemError {
  const errors: FieldError[] = [];
  for (const issue of error.issues) {
    const path = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys)
        errors.push({ field: path ? `${path}.${key}` : key, message: 'is not a known field' });
    } else if (issue.code === 'invalid_type' && path === '') {
      errors.push({ field: '(body)', message: 'must be a JSON object' });
    } else {
      errors.push({ field: path || '(body)', message: issue.message });
    }
  }
  const fields = [...new Set(errors.map((e) => e.field))].join(', ');
  return new ProblemError(400, `invalid ${fields}`, { errors });
}
