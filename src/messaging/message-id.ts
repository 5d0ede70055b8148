/**
 * Message ids: UUID version 7 (RFC 9562 §5.7), a 48-bit millisecond timestamp followed by random
 * bits. New ids sort after older ones, so each insert lands on the last page of the unique index
 * instead of a random one: one page written per commit rather than one per message. The time in
 * the id is the message's `created_at`, which the record shows anyway.
 */
import { randomFillSync } from 'node:crypto';

const pool = Buffer.alloc(16 * 256);
let offset = pool.length;

export function messageId(nowMs = Date.now()): string {
  if (offset >= pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const b = pool.subarray(offset, offset + 16);
  offset += 16;
  b.writeUIntBE(Math.floor(nowMs) % 2 ** 48, 0, 6);
  b[6] = (b[6]! & 0x0f) | 0x70; // version 7
  b[8] = (b[8]! & 0x3f) | 0x80; // variant 10
  const hex = b.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
