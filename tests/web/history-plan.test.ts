/** The node page asks for the interval that suits the range, and pages raw history by its Link header. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeCursor } from '../../src/weather/cursor.js';
import {
  fromLocalInput,
  intervalForSpan,
  planHistory,
  rangeFromQuery,
  rangeToQuery,
  toLocalInput,
} from '../../src/web/src/lib/history-plan.js';
import { nextLink } from '../../src/web/src/lib/link-header.js';

const NOW = Date.UTC(2026, 10, 21, 12, 0);
const H = 3_600_000;
const D = 24 * H;

describe('history plans', () => {
  it('uses raw readings for 24 h, hourly means for 7 and 30 days, daily means for a year', () => {
    expect(planHistory({ kind: 'preset', preset: '24h' }, NOW)).toEqual({
      start: NOW - D,
      end: NOW,
      interval: 'raw',
      live: true,
    });
    expect(planHistory({ kind: 'preset', preset: '7d' }, NOW)).toMatchObject({
      start: NOW - 7 * D,
      interval: '1h',
    });
    expect(planHistory({ kind: 'preset', preset: '30d' }, NOW)).toMatchObject({
      start: NOW - 30 * D,
      interval: '1h',
    });
    expect(planHistory({ kind: 'preset', preset: '1y' }, NOW)).toMatchObject({
      start: NOW - 365 * D,
      interval: '1d',
    });
  });

  it('picks a custom range’s interval by its length', () => {
    expect(intervalForSpan(2 * D)).toBe('raw');
    expect(intervalForSpan(2 * D + 1)).toBe('1h');
    expect(intervalForSpan(92 * D)).toBe('1h');
    expect(intervalForSpan(92 * D + 1)).toBe('1d');
    expect(planHistory({ kind: 'custom', start: NOW - 10 * D, end: NOW }, NOW)).toEqual({
      start: NOW - 10 * D,
      end: NOW,
      interval: '1h',
      live: false,
    });
  });

  it('explains a custom range that cannot be asked for', () => {
    expect(planHistory({ kind: 'custom', start: NOW, end: NOW - H }, NOW)).toEqual({
      error: 'The end must be after the start.',
    });
    expect(planHistory({ kind: 'custom', start: NOW, end: NOW }, NOW)).toEqual({
      error: 'The end must be after the start.',
    });
    expect(planHistory({ kind: 'custom', start: Number.NaN, end: NOW }, NOW)).toEqual({
      error: 'Choose both a start and an end.',
    });
    expect(planHistory({ kind: 'custom', start: NOW - 30 * 366 * D, end: NOW }, NOW)).toEqual({
      error: 'Choose a range of at most 20 years.',
    });
  });

  it('round-trips a range through the page’s query string (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4e12 }), fc.integer({ min: 1, max: 1e11 }), (start, span) => {
        const choice = { kind: 'custom' as const, start, end: start + span };
        expect(rangeFromQuery(`?${rangeToQuery(choice)}`)).toEqual(choice);
      }),
    );
    expect(rangeFromQuery('?range=7d')).toEqual({ kind: 'preset', preset: '7d' });
    expect(rangeFromQuery('?range=bogus')).toEqual({ kind: 'preset', preset: '24h' });
    expect(rangeFromQuery('')).toEqual({ kind: 'preset', preset: '24h' });
  });

  it('reads and writes datetime-local values in the browser’s zone', () => {
    const ms = new Date(2026, 10, 21, 9, 5).getTime();
    expect(toLocalInput(ms)).toBe('2026-11-21T09:05');
    expect(fromLocalInput('2026-11-21T09:05')).toBe(ms);
    expect(fromLocalInput('')).toBeNaN();
    expect(fromLocalInput('yesterday')).toBeNaN();
  });
});

describe('Link headers', () => {
  it('follows the weather API’s rel="next" exactly as it writes it', () => {
    const path = `/api/v1/weather/history?node_id=%21a1b2c3d4&start=x&end=y&interval=raw&limit=10000&cursor=${encodeCursor('raw', NOW)}`;
    expect(nextLink(`<${path}>; rel="next"`)).toBe(path);
  });

  it('finds next among other links and parameters, and nothing when there is none', () => {
    expect(nextLink('</a>; rel="prev", </b>; rel="next"')).toBe('/b');
    expect(nextLink('</b>; title="x, y"; rel="next last"')).toBe('/b');
    expect(nextLink('</b>; rel=next')).toBe('/b');
    expect(nextLink('</a>; rel="prev"')).toBeUndefined();
    expect(nextLink(null)).toBeUndefined();
    expect(nextLink('garbage')).toBeUndefined();
  });
});
