/**
 * The hub's own JSON (`/health`, `/api/version`), problem details, and the paging parameters
 * every list shares. Plain zod and nothing else: the web UI takes its types from these files
 * (type-only imports), so they must compile for the browser too — no Node APIs here.
 */
import { z } from 'zod';

/** One invalid field of a problem (docs/architecture.md "Decisions": errors); some endpoints add `reason` or `index`. */
export const fieldErrorSchema = z.looseObject({ field: z.string(), message: z.string() });

/** RFC 9457 problem details as the one onError writes them; extension members are allowed. */
export const problemSchema = z
  .looseObject({
    type: z.string(),
    title: z.string(),
    status: z.int(),
    detail: z.string().optional(),
    request_id: z.string().optional(),
    errors: z.array(fieldErrorSchema).optional(),
  })
  .meta({ description: 'RFC 9457 problem details; `errors` names each invalid field.' });

/** The radio link as `/health`, the live stream and the `radio.status` event describe it (src/domain/radio.ts RadioStatus). */
export const radioStatusSchema = z.object({
  state: z.enum(['disconnected', 'connecting', 'configuring', 'connected']),
  transport: z.enum(['serial', 'tcp', 'none']),
  address: z.string().optional(),
  simulated: z.boolean(),
  myNodeNum: z.int().optional(),
  lastError: z.string().optional(),
});

export const healthReportSchema = z.object({
  status: z
    .enum(['ok', 'degraded', 'down'])
    .meta({ description: 'degraded: running, but something cannot do its job; down: answered with 503' }),
  version: z.string(),
  uptime_s: z.int(),
  radio: radioStatusSchema,
  actors: z.array(
    z.looseObject({
      name: z.string(),
      state: z.string(),
      required: z.boolean(),
      ready: z.boolean(),
      restarts: z.int(),
      last_error: z.string().optional(),
    }),
  ),
});

export const versionSchema = z.object({ version: z.string() });

/** A list's page size: its default when absent, and the most one page may hold. */
export interface PageLimits {
  default: number;
  max: number;
}

/**
 * The `limit` query parameter, read from its string: an integer from 1 to `limits.max`. The
 * document shows it as the integer it is.
 */
export function limitParam(limits: PageLimits) {
  const message = `must be an integer from 1 to ${limits.max}`;
  // A leading zero passes; a long run of digits never reaches Number.
  const digits = String(limits.max).length + 1;
  return z
    .string()
    .regex(new RegExp(`^[0-9]{1,${digits}}$`), message)
    .transform(Number)
    .pipe(z.int().min(1, message).max(limits.max, message))
    .meta({
      type: 'integer',
      minimum: 1,
      maximum: limits.max,
      default: limits.default,
      description: `Page size, 1 to ${limits.max} (default ${limits.default}).`,
    });
}

export const CURSOR_DESCRIPTION = 'Opaque: copy it from the previous page, never build it.';
