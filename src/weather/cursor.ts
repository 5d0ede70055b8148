/**
 * The history cursor's position (docs/architecture.md "Decisions": an opaque cursor announced in `Link`):
 * the last timestamp / bucket start of the previous page (`a`), bound to the interval it was
 * made for (`i`) — a cursor of `interval=1h` means nothing to `interval=raw`.
 */
import { z } from 'zod';
import { cursorCodec } from '../http/paging.js';
import { type HistoryInterval, historyIntervalSchema } from './schemas.js';

export const historyCursor = cursorCodec(
  z.strictObject({ v: z.literal(1), i: historyIntervalSchema, a: z.int() }),
);

export function encodeCursor(interval: HistoryInterval, after: number): string {
  return historyCursor.encode({ v: 1, i: interval, a: after });
}
