/**
 * The events cursor (spec "Events query parameters": "opaque cursor built from a timestamp and an
 * id"): the direction, the timestamp and the event's sequence number, through the hub's cursor
 * codec (src/http/paging.ts). It names a position, not a page of a particular query: it stays
 * valid when the filters change.
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
