/**
 * The events cursor (spec "Events query parameters": "opaque cursor built from a timestamp and an
 * id"): the direction, the timestamp and the event's sequence number, through the hub's cursor
 * codec (src/http/paging.ts). It names a position, not a page of a particular query: it stays
 * valid when the filters change. The alerts and the audit trail page alike on (at, id)
 * (atIdCursor), and every list answers in the same envelope (pageEnvelope).
 */
import { z } from 'zod';
import { cursorCodec, readCursor } from '../../../src/http/paging.js';
import type { Direction, Position } from '../store/event-query.js';

const eventsCursor = cursorCodec(
  z.strictObject({ d: z.enum(['next', 'prev']), ts: z.int().nonnegative(), seq: z.int().positive() }),
);

export function encodeCursor(direction: Direction, position: Position): string {
  return eventsCursor.encode({ d: direction, ts: position.ts, seq: position.seq });
}

/** The cursor's direction and position; a 400 naming `cursor` when this API did not issue it. */
export function readEventsCursor(token: string): { direction: Direction; position: Position } {
  const { d, ts, seq } = readCursor(eventsCursor, token, 'is not a cursor this API issued');
  return { direction: d, position: { ts, seq } };
}

/**
 * The search envelope (events-routes.ts) of one keyset page: its rows as `data`, a cursor each
 * way (null where nothing more lies that way), and the limit it was read with. The events, the
 * timeline, the alerts and the audit trail answer in it.
 */
export function pageEnvelope<Row, At, Json>(
  page: { rows: readonly Row[]; next?: At; prev?: At },
  toJson: (row: Row) => Json,
  encode: (direction: Direction, position: At) => string,
  limit: number,
): { data: Json[]; next_cursor: string | null; prev_cursor: string | null; limit: number } {
  return {
    data: page.rows.map((row) => toJson(row)),
    next_cursor: page.next ? encode('next', page.next) : null,
    prev_cursor: page.prev ? encode('prev', page.prev) : null,
    limit,
  };
}

/**
 * The cursor of a list keyset-paged on (at, id) (the alerts, the audit trail): the direction and
 * the position, with `k` naming the list, so that one list's cursor is never taken for another's
 * (nor for an events cursor).
 */
export function atIdCursor(kind: string) {
  const codec = cursorCodec(
    z.strictObject({
      k: z.literal(kind),
      d: z.enum(['next', 'prev']),
      at: z.int().nonnegative(),
      id: z.int().positive(),
    }),
  );
  return {
    encode: (direction: Direction, p: { at: number; id: number }): string =>
      codec.encode({ k: kind, d: direction, at: p.at, id: p.id }),
    /** Where to continue (undefined without a token); a 400 naming `cursor` for one this API did not issue. */
    read(
      token: string | undefined,
    ): { direction: Direction; position: { at: number; id: number } } | undefined {
      if (token === undefined) return undefined;
      const { d, at, id } = readCursor(codec, token, 'is not a cursor this API issued');
      return { direction: d, position: { at, id } };
    },
  };
}
