/**
 * Paging of the messaging lists (src/http/paging.ts): `limit` (1–10000, default 1000) and an
 * opaque `cursor` over each list's position. A malformed value is a 400 naming the parameter.
 */
import { z } from 'zod';
import { cursorCodec, limitReader, nextPageHeaders, readCursor } from '../http/paging.js';
import type { ConversationCursor } from './messaging-storage.js';
import { MESSAGING_PAGE } from './schemas.js';

export const pageLimit = limitReader(MESSAGING_PAGE);

/** What a 400 says of a `cursor` that is not one of the list's. */
export const NOT_OURS = 'is not a cursor of this list';
/** A message row id: conversations page oldest first after it, the unmatched list newest first before it. */
const rowCursor = cursorCodec(z.strictObject({ r: z.int().nonnegative() }));
const conversationCursor = cursorCodec(z.strictObject({ t: z.int(), n: z.string() }));

export const encodeRowCursor = (rowId: number): string => rowCursor.encode({ r: rowId });
export const decodeRowCursor = (value: string): number => readCursor(rowCursor, value, NOT_OURS).r;

export function encodeConversationCursor(cursor: ConversationCursor): string {
  return conversationCursor.encode({ t: cursor.latestAt, n: cursor.nodeId });
}

export function decodeConversationCursor(value: string): ConversationCursor {
  const { t, n } = readCursor(conversationCursor, value, NOT_OURS);
  return { latestAt: t, nodeId: n };
}

/**
 * A page of a list read with `limit + 1` rows: the first `limit` rows and, when more remain,
 * the `Link: <…>; rel="next"` header to the page after (the cursor of its last row).
 */
export function listPage<T>(
  path: string,
  read: T[],
  limit: number,
  cursorOf: (last: T) => string,
): { rows: T[]; headers: Record<string, string> } {
  const more = read.length > limit;
  const rows = more ? read.slice(0, limit) : read;
  const next = more ? cursorOf(rows[rows.length - 1]!) : undefined;
  return { rows, headers: nextPageHeaders(path, { limit: String(limit) }, next) };
}
