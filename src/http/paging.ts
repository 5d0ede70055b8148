/**
 * Paging shared by every list (weather history, messaging lists, the audit events search):
 * `limit` with a per-list default and maximum, an opaque cursor over a typed position, and the
 * RFC 8288 `Link: <…>; rel="next"` header that leads to the next page.
 *
 * A cursor is base64url of the position's JSON, checked by the list's position schema and
 * accepted only in exactly the form this API issued. It names where a page ended, so each list
 * decides what a position is (a timestamp, a row id, a timestamp and an id…).
 */
import type { z } from 'zod';
import { fieldProblem } from './problem.js';
import { limitParam, type PageLimits } from './schemas.js';

export type { PageLimits };

/** Reads `limit` outside a zod query schema: the default when absent, else a 400 naming `limit`. */
export function limitReader(limits: PageLimits): (value: string | undefined) => number {
  const schema = limitParam(limits);
  return (value) => {
    if (value === undefined) return limits.default;
    const parsed = schema.safeParse(value);
    if (!parsed.success) throw fieldProblem('limit', parsed.error.issues[0]!.message);
    return parsed.data;
  };
}

export interface CursorCodec<P> {
  encode(position: P): string;
  /** The position, or undefined when the token is not one this codec issued. */
  decode(token: string): P | undefined;
}

const TOKEN = /^[A-Za-z0-9_-]{1,200}$/;

export function cursorCodec<P>(position: z.ZodType<P, P>): CursorCodec<P> {
  // Parsing puts the keys in the schema's order, so one position has exactly one token.
  const encode = (p: P) => Buffer.from(JSON.stringify(position.parse(p))).toString('base64url');
  return {
    encode,
    decode(token) {
      if (!TOKEN.test(token)) return undefined;
      let json: unknown;
      try {
        json = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
      } catch {
        return undefined;
      }
      const parsed = position.safeParse(json);
      if (!parsed.success) return undefined;
      // base64url decoding alone would accept look-alikes (other padding bits, other spacing).
      return encode(parsed.data) === token ? parsed.data : undefined;
    },
  };
}

/** Decodes a `cursor` parameter, or answers 400 naming `cursor` with `message`. */
export function readCursor<P>(codec: CursorCodec<P>, token: string, message: string): P {
  const position = codec.decode(token);
  if (position === undefined) throw fieldProblem('cursor', message);
  return position;
}

/**
 * The `Link` header of a page with more after it (none when `cursor` is undefined): the same
 * path and parameters, as the endpoint read them, with the next page's cursor.
 */
export function nextPageHeaders(
  path: string,
  params: Record<string, string>,
  cursor: string | undefined,
): Record<string, string> {
  if (cursor === undefined) return {};
  const query = new URLSearchParams(params);
  query.set('cursor', cursor);
  return { link: `<${path}?${query}>; rel="next"` };
}
