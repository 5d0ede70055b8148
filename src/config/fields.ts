/**
 * The settings kit: field types shared by the settings schemas of the hub, its modules, the
 * plugins and the upstream: text, comma-separated lists, bounded integers, ports, durations
 * (`90s`, `15m`, `24h`, `30d`), rates (`10/5m`) and flags (`true`/`false`, `yes`/`no`, …).
 */
import { z } from 'zod';

/** A string, trimmed. */
export const text = z.string().trim();

/** `a, b,c` → `['a', 'b', 'c']` (blank entries dropped). */
export function splitList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** A comma-separated list. */
export const list = text.transform(splitList);

/** A whole number from `min` to `max`; anything else reads "must be a whole number from min to max". */
export const int = (min: number, max: number, words = `must be a whole number from ${min} to ${max}`) => {
  const error = { error: words };
  return z.coerce.number(error).int(error).min(min, error).max(max, error);
};

/** `90s`, `15m`, `24h`, `30d` → milliseconds. */
export function parseDuration(value: string): number | undefined {
  const m = /^(\d+)(s|m|h|d)$/.exec(value.trim());
  if (!m) return undefined;
  const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 's' | 'm' | 'h' | 'd'];
  return Number(m[1]) * unit;
}

/** Whether `zone` is an IANA time zone this runtime knows (`UTC`, `Europe/Berlin`). */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** A TCP port; 0 picks any free port. */
export const port = int(0, 65535, 'must be a whole number from 1 to 65535, or 0 for any free port');
export const duration = z.string().transform((v, ctx) => {
  const ms = parseDuration(v);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: 'must be a duration like 90s, 15m, 24h or 30d' });
    return z.NEVER;
  }
  return ms;
});

/** `10/5m` → at most 10 per 5 minutes. */
export function parseRate(value: string): { count: number; windowMs: number } | undefined {
  const m = /^(\d{1,9})\/(\d+[smhd])$/.exec(value.trim());
  const windowMs = m ? parseDuration(m[2]!) : undefined;
  if (!m || windowMs === undefined || windowMs === 0 || Number(m[1]) < 1) return undefined;
  return { count: Number(m[1]), windowMs };
}

export const rate = z.string().transform((v, ctx) => {
  const parsed = parseRate(v);
  if (!parsed) {
    ctx.addIssue({ code: 'custom', message: 'must be a count per window like 10/5m or 100/1h' });
    return z.NEVER;
  }
  return parsed;
});

/** `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`), or a JSON boolean from CONFIG_FILE. */
export const flag = z.union([z.boolean(), z.string()]).transform((v, ctx) => {
  if (typeof v === 'boolean') return v;
  const s = v.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(s)) return true;
  if (['false', '0', 'no', 'off', ''].includes(s)) return false;
  ctx.addIssue({ code: 'custom', message: 'must be true or false (also yes/no, on/off, 1/0)' });
  return z.NEVER;
});

/**
 * A setting read by a parse function that returns the value, or a string saying what is wrong
 * (RADIO, MESH_CHANNEL_KEYS, MAP_TILES, HTTP_COMPONENT_PORTS): the string becomes the problem.
 */
export function parsedBy<I, T>(parse: (value: I) => T | string) {
  return (value: I, ctx: z.RefinementCtx): T => {
    const parsed = parse(value);
    if (typeof parsed === 'string') {
      ctx.addIssue({ code: 'custom', message: parsed });
      return z.NEVER;
    }
    return parsed;
  };
}
