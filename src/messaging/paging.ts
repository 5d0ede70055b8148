/**
 * Paging of the messaging lists: `limit` (1–10000, default 1000) and an opaque `cursor`. A
 * malformed value is a 400 naming the parameter.
 */
import { ProblemError } from '../http/problem.js';
import type { ConversationCursor } from './conversation-repository.js';

export const DEFAULT_PAGE_LIMIT = 1000;
export const MAX_PAGE_LIMIT = 10_000;

function badParam(field: string, message: string): ProblemError {
  return new ProblemError(400, `invalid ${field}`, { errors: [{ field, message }] });
}

export function pageLimit(value: string | undefined): number {
  if (value === undefined) return DEFAULT_PAGE_LIMIT;
  const n = /^[0-9]{1,6}$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= 1 && n <= MAX_PAGE_LIMIT))
    throw badParam('limit', `must be an integer from 1 to ${MAX_PAGE_LIMIT}`);
  return n;
}

function decode(value: string): unknown {
  try {
    return JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

export function encodeRowCursor(rowId: number): string {
  return Buffer.from(JSON.stringify({ r: rowId })).toString('base64url');
}

export function decodeRowCursor(value: string): number {
  const parsed = value.length <= 200 ? (decode(value) as { r?: unknown } | undefined) : undefined;
  const r = parsed?.r;
  if (typeof r !== 'number' || !Number.isSafeInteger(r) || r < 0)
    throw badParam('cursor', 'is not a cursor of this list');
  return r;
}

export function encodeConversationCursor(cursor: ConversationCursor): string {
  return Buffer.from(JSON.stringify({ t: cursor.latestAt, n: cursor.nodeId })).toString('base64url');
}

export function decodeConversationCursor(value: string): ConversationCursor {
  const parsed =
    value.length <= 200 ? (decode(value) as { t?: unknown; n?: unknown } | undefined) : undefined;
  if (typeof parsed?.t !== 'number' || !Number.isSafeInteger(parsed.t) || typeof parsed.n !== 'string') {
    throw badParam('cursor', 'is not a cursor of this list');
  }
  return { latestAt: parsed.t, nodeId: parsed.n };
}
