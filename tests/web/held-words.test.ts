/** What the chat says of a text that waits (docs/held-texts.md), on a hub and on the upstream. */
import { describe, expect, it } from 'vitest';
import type { SiteJson } from '../../src/web/src/api/types.js';
import { upstreamWaitingWords, waitingWords } from '../../src/web/src/chat/held-words.js';
import { formatTime } from '../../src/web/src/lib/format.js';

const NOW = Date.UTC(2026, 10, 21, 12);
const iso = (ms: number) => new Date(ms).toISOString();

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

  it('does not call a node that is heard but does not acknowledge out of range', () => {
    const next = NOW + 5 * 60_000;
    // Heard after the text was written.
    expect(
      waitingWords('Chapel Weather Station', NOW - 60_000, NOW, {
        createdAt: NOW - 10 * 60_000,
        nextAttemptAt: next,
      }),
    ).toBe(
      `Chapel Weather Station was heard 1 min ago but is not acknowledging; trying again by ${formatTime(next, NOW)}`,
    );
    // Heard seconds ago (before the text): in range all the same.
    expect(waitingWords('Chapel', NOW - 7_000, NOW, { createdAt: NOW - 1_000 })).toBe(
      'Chapel was heard just now but is not acknowledging; trying again soon',
    );
  });
});

describe('a queued text on the upstream', () => {
  const site: SiteJson = {
    site_id: 'south',
    name: 'South ridge',
    last_contact_at: iso(NOW - 10 * 60_000),
    stopped_at: null,
    last_batch_at: null,
    lag_s: null,
    acked_seq: 0,
    node_count: 1,
    revoked: false,
  };

  it('says when its site is offline', () => {
    expect(upstreamWaitingWords({ site_id: 'south', history: [] }, [site], NOW)).toBe(
      `South ridge is offline since ${formatTime(NOW - 10 * 60_000, NOW)}; the text goes out when it is back`,
    );
  });

  it('says what its site said of it, and when', () => {
    const online = { ...site, last_contact_at: iso(NOW - 5_000) };
    const at = iso(NOW - 60_000);
    const history = [
      { status: 'queued' as const, at: iso(NOW - 120_000) },
      {
        status: 'queued' as const,
        at,
        reason:
          'the radio repeated it but no node acknowledged it (the node may be out of range or off) [MAX_RETRANSMIT]; waiting for Ana to come in range (last heard 3 h ago): sent again as soon as it is heard, at the latest in 5 min',
      },
    ];
    expect(upstreamWaitingWords({ site_id: 'south', history }, [online], NOW)).toBe(
      `Waiting for Ana to come in range (last heard 3 h ago), as of ${formatTime(NOW - 60_000, NOW)}`,
    );
    // Nothing said yet: simply queued.
    expect(
      upstreamWaitingWords({ site_id: 'south', history: history.slice(0, 1) }, [online], NOW),
    ).toBeUndefined();
  });
});
