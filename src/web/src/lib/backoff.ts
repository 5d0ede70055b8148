/** Delay before reconnection attempt `attempt` (0-based): 1, 2, 4, 8 s, then 15 s, each ±20 % so many phones do not retry in step. */
export function reconnectDelayMs(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(15_000, 1_000 * 2 ** Math.max(0, Math.min(attempt, 10)));
  return Math.round(base * (0.8 + 0.4 * random()));
}
