/** What the chat says of a text that waits for its node (docs/held-texts.md). */
import { describe, expect, it } from 'vitest';
import { waitingWords } from '../../src/web/src/chat/held-words.js';

const NOW = Date.UTC(2026, 10, 21, 12);

describe('a held text in the chat', () => {
  it('names the node and when it was last heard', () => {
    expect(waitingWords('Ana at the mill', NOW - 3 * 3_600_000, NOW)).toBe(
      'Waiting for Ana at the mill to come in range (last heard 3 h ago)',
    );
    expect(waitingWords('!0af52a53', NOW - 20 * 60_000, NOW)).toBe(
      'Waiting for !0af52a53 to come in range (last heard 20 min ago)',
    );
  });

  it('says so when the hub never heard the node', () => {
    expect(waitingWords('Ridge', undefined, NOW)).toBe('Waiting for Ridge to come in range (never heard)');
    expect(waitingWords('Ridge', Number.NaN, NOW)).toBe('Waiting for Ridge to come in range (never heard)');
  });
});
