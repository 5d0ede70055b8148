/** Settings of the hub's token endpoint. */
import { z } from 'zod';
import { duration } from '../config/fields.js';

export const authSettings = z.object({
  /** Lifetime of tokens from POST /api/v1/auth/token. */
  AUTH_TOKEN_TTL: duration.prefault('1h'),
});
