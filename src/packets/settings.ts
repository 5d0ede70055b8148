/** Settings of the packet log (`GET /api/v1/packets`): on or off, and its two bounds. */
import { z } from 'zod';
import { flag, int } from '../config/fields.js';

export const packetLogSettings = z.object({
  /** Keep a log of every packet the hub decodes (its radio facts, never its contents). */
  PACKET_LOG: flag.prefault('true'),
  /** The most rows the log holds; past it the oldest go first. */
  PACKET_LOG_MAX_ROWS: int(100, 10_000_000).default(100_000),
  /** Rows older than this many days are trimmed. */
  PACKET_LOG_DAYS: int(1, 365).default(7),
});

export type PacketLogSettings = z.output<typeof packetLogSettings>;
