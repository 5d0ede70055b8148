/**
 * The history paging cursor (DESIGN.md "Decisions": an opaque cursor announced in `Link`).
 * Opaque to clients — base64url of a small versioned JSON — and bound to the interval it was
 * made for: a cursor of `interval=1h` means nothing to `interval=raw`.
 */
import type { HistoryInterval } from './weather-service.js';

interface CursorPayload {
  v: 1;
  i: HistoryInterval;
  /** The last timestamp / bucket start of the previous page. */
  a: number;
}

const TOKEN = /^[A-Za-z0-9_-]{1,200}$/;

export function encodeCursor(interval: HistoryInterval, after: number): string {
  const payload: CursorPayload = { v: 1, i: interval, a: after };
  return Buffer.from(JSON.stringify(payload)).toString('base64url');
}

export type DecodedCursor =
  | { ok: true; interval: HistoryInterval; after: number }
  | { ok: false; reason: string };

export function decodeCursor(token: string): DecodedCursor {
  const malformed = { ok: false, reason: 'is not a cursor this API issued' } as const;
  if (!TOKEN.test(token)) return malformed;
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    return malformed;
  }
  if (typeof payload !== 'object' || payload === null) return malformed;
  const { v, i, a } = payload as Record<string, unknown>;
  if (
    v !== 1 ||
    (i !== 'raw' && i !== '1h' && i !== '1d') ||
    typeof a !== 'number' ||
    !Number.isSafeInteger(a)
  ) {
    return malformed;
  }
  return { ok: true, interval: i, after: a };
}
