/**
 * Whether a node that a text waits for is out of range or merely silent about it: one rule for
 * the hub's reasons and the chat's words (docs/held-texts.md).
 */

/** Heard this recently, a node is in range: it only does not acknowledge. */
export const HEARD_RECENTLY_MS = 2 * 60_000;

/**
 * The node was heard since the text was written, or within HEARD_RECENTLY_MS: it is in range,
 * yet does not acknowledge the text (so "waiting for it to come in range" would be untrue).
 */
export function heardButNotAcknowledging(
  lastHeardAt: number | undefined,
  textCreatedAt: number,
  now: number,
): boolean {
  if (lastHeardAt === undefined || Number.isNaN(lastHeardAt)) return false;
  return lastHeardAt >= textCreatedAt || now - lastHeardAt < HEARD_RECENTLY_MS;
}
