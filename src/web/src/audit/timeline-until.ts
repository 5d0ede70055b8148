/** Issue 29: where an actor's timeline opened from an event ends its window. */
const DAY_MS = 86_400_000;

/**
 * The timeline's last day for an event: none (today) while the event is inside the default
 * 30-day window; for an older one, two weeks after it (or today), so it sits mid-window.
 */
export function untilFor(timestamp: string, now = Date.now()): string | undefined {
  const at = Date.parse(timestamp);
  if (!Number.isFinite(at) || at >= now - 29 * DAY_MS) return undefined;
  return new Date(Math.min(now, at + 14 * DAY_MS)).toISOString().slice(0, 10);
}
