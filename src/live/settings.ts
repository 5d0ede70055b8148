/** Settings of the dashboard's live stream (`GET /api/v1/live`). */
import { z } from 'zod';
import { int } from '../config/fields.js';

export const liveSettings = z.object({
  /**
   * Live streams one client address may hold open at once; past it 429 with Retry-After, so one
   * address cannot take every one of the stream's slots (100 in all).
   */
  LIVE_MAX_STREAMS_PER_ADDRESS: int(1, 100).default(8),
});
