/** What the chat says of a held text (docs/held-texts.md), as a pure function of the facts. */
import { formatAge } from '../lib/format.js';

/**
 * `Waiting for Ana to come in range (last heard 3 h ago)`. `lastHeardMs` undefined (or not a
 * time): the hub never heard the node.
 */
export function waitingWords(name: string, lastHeardMs: number | undefined, nowMs: number): string {
  const heard =
    lastHeardMs === undefined || Number.isNaN(lastHeardMs)
      ? 'never heard'
      : `last heard ${formatAge(lastHeardMs, nowMs)}`;
  return `Waiting for ${name} to come in range (${heard})`;
}
