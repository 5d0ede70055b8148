/**
 * The drawer's "This actor's timeline" for an old event: the window is moved back so the event
 * is in it (two weeks after it ends the window), and a recent event keeps today's window.
 */
import { expect, it } from 'vitest';
import { untilFor } from '../../src/web/src/audit/timeline-until.js';

const NOW = Date.parse('2026-11-29T12:00:00Z');

it('keeps today for an event inside the default window', () => {
  expect(untilFor('2026-11-29T08:00:00Z', NOW)).toBeUndefined();
  expect(untilFor('2026-11-01T00:00:00Z', NOW)).toBeUndefined();
});

it('ends the window two weeks after an older event, and never after today', () => {
  expect(untilFor('2026-06-03T10:00:00Z', NOW)).toBe('2026-06-17');
  expect(untilFor('2026-10-25T10:00:00Z', NOW)).toBe('2026-11-08');
  expect(untilFor('2026-10-29T10:00:00Z', NOW)).toBe('2026-11-12');
  expect(untilFor('not a time', NOW)).toBeUndefined();
});
