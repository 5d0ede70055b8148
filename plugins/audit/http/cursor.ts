/**
 * The events cursor (spec "Events query parameters": "opaque cursor built from a timestamp and an
 * id joined by a separator"): the direction, then `{timestamp}_{id}`, base64url-encoded. It names
 * a position, not a page of a particular query: it stays valid when the filters change.
 */
import type { Direction, Position } from '../store/event-query.js';

const TOKEN = /^[A-Za-z0-9_-]{4,120}$/;
const PAYLOAD = /^(n|p)\.(\d{1,15})_(\d{1,15})$/;

export function encodeCursor(direction: Direction, position: Position): string {
  return Buffer.from(`${direction === 'next' ? 'n' : 'p'}.${position.ts}_${position.seq}`).toString(
    'base64url',
  );
}

export function decodeCursor(token: string): { direction: Direction; position: Position } | undefined {
  if (!TOKEN.test(token)) return undefined;
  const m = PAYLOAD.exec(Buffer.from(token, 'base64url').toString('latin1'));
  if (!m) return undefined;
  const ts = Number(m[2]);
  const seq = Number(m[3]);
  if (!Number.isSafeInteger(ts) || !Number.isSafeInteger(seq)) return undefined;
  const decoded = { direction: (m[1] === 'n' ? 'next' : 'prev') as Direction, position: { ts, seq } };
  // Only the exact token this API issued: base64url decoding alone would accept look-alikes.
  return encodeCursor(decoded.direction, decoded.position) === token ? decoded : undefined;
}
