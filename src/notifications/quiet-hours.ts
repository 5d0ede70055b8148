/**
 * Quiet hours: a daily window, `from` to `to` (wrapping midnight when `to` is earlier), in a time
 * zone. Minutes of the day, so the check is two comparisons after one Intl lookup.
 */
export interface QuietHours {
  from: number;
  to: number;
}

const CLOCK = /^([01]\d|2[0-3]):([0-5]\d)$/;

function minutesOf(clock: string): number | undefined {
  const m = CLOCK.exec(clock.trim());
  return m ? Number(m[1]) * 60 + Number(m[2]) : undefined;
}

/** `22:00-07:00` → minutes; a string says what is wrong. */
export function parseQuietHours(value: string): QuietHours | string {
  const [a, b, ...rest] = value.split('-');
  const from = a === undefined ? undefined : minutesOf(a);
  const to = b === undefined ? undefined : minutesOf(b);
  if (rest.length > 0 || from === undefined || to === undefined || from === to)
    return 'expected two different times like 22:00-07:00';
  return { from, to };
}

export function formatQuietHours(q: QuietHours): string {
  const clock = (m: number) =>
    `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
  return `${clock(q.from)}-${clock(q.to)}`;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The minute of the day of `at` in `timeZone`. */
export function minuteOfDay(at: number, timeZone: string): number {
  if (timeZone === 'UTC') {
    const d = new Date(at);
    return d.getUTCHours() * 60 + d.getUTCMinutes();
  }
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    formatters.set(timeZone, f);
  }
  const parts = f.formatToParts(at);
  const hour = Number(parts.find((p) => p.type === 'hour')?.value ?? 0);
  const minute = Number(parts.find((p) => p.type === 'minute')?.value ?? 0);
  return hour * 60 + minute;
}

export function isQuiet(q: QuietHours | undefined, at: number, timeZone: string): boolean {
  if (!q) return false;
  const m = minuteOfDay(at, timeZone);
  return q.from < q.to ? m >= q.from && m < q.to : m >= q.from || m < q.to;
}
