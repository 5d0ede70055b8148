/** What the UI says: ages, units, directions, errors, routes, the coordinate grid, reconnection delays. */
import { describe, expect, it } from 'vitest';
import { reconnectDelayMs } from '../../src/web/src/lib/backoff.js';
import { cardinal, formatAge, formatCoordinates, formatMetric } from '../../src/web/src/lib/format.js';
import { freshness } from '../../src/web/src/lib/freshness.js';
import { gridLabel, gridStep, gridValues } from '../../src/web/src/lib/graticule-steps.js';
import { tokenExpiry, tokenUsername } from '../../src/web/src/lib/jwt.js';
import { metricInfo } from '../../src/web/src/lib/metrics.js';
import { ApiError, apiErrorFrom, plainWords, retryAfterSeconds } from '../../src/web/src/lib/problem.js';
import { matchRoute } from '../../src/web/src/lib/routes.js';

const NOW = Date.UTC(2026, 10, 21, 12);

describe('values and times', () => {
  it('writes metrics with their units, pressure in hPa', () => {
    expect(formatMetric(metricInfo('temperature_c'), 21.46)).toBe('21.5 °C');
    expect(formatMetric(metricInfo('pressure_pa'), 101325)).toBe('1013.3 hPa');
    expect(formatMetric(metricInfo('humidity_percent'), 63.4)).toBe('63 %');
    expect(formatMetric(metricInfo('wind_direction'), 270)).toBe('270°');
    expect(formatMetric(metricInfo('pm25_ugm3'), 12)).toBe('12 µg/m³');
  });

  it('names wind directions and ages as people say them', () => {
    expect([0, 22, 45, 225, 359, -90].map(cardinal)).toEqual(['N', 'NNE', 'NE', 'SW', 'N', 'W']);
    expect(formatAge(NOW - 10_000, NOW)).toBe('just now');
    expect(formatAge(NOW + 60_000, NOW)).toBe('just now');
    expect(formatAge(NOW - 3 * 60_000, NOW)).toBe('3 min ago');
    expect(formatAge(NOW - 5 * 3_600_000, NOW)).toBe('5 h ago');
    expect(formatAge(NOW - 3 * 86_400_000, NOW)).toBe('3 days ago');
    expect(formatCoordinates(47.3769, -8.5417)).toBe('47.37690° N, 8.54170° W');
  });

  it('colours nodes by when they were last heard', () => {
    expect(freshness(NOW - 60_000, NOW)).toBe('live');
    expect(freshness(NOW - 15 * 60_000, NOW)).toBe('live');
    expect(freshness(NOW - 16 * 60_000, NOW)).toBe('recent');
    expect(freshness(NOW - 3 * 3_600_000, NOW)).toBe('stale');
    expect(freshness(NOW - 25 * 3_600_000, NOW)).toBe('silent');
    expect(freshness(undefined, NOW)).toBe('silent');
  });
});

describe('API errors in plain words', () => {
  it('turns problem details into sentences a person can act on', () => {
    const field = apiErrorFrom(
      400,
      { detail: 'invalid end', errors: [{ field: 'end', message: 'must be after start' }] },
      undefined,
    );
    expect(plainWords(field)).toBe('End must be after start.');
    expect(plainWords(new ApiError(0, 'x'))).toBe(
      "The hub can't be reached. Check your Wi-Fi or network connection.",
    );
    expect(plainWords(apiErrorFrom(429, {}, 42))).toBe('Too many requests. Wait 42 s and try again.');
    expect(
      plainWords(
        apiErrorFrom(
          500,
          { detail: 'the server could not complete the request', request_id: 'r-1' },
          undefined,
        ),
      ),
    ).toMatch(/reference r-1/);
    expect(plainWords(apiErrorFrom(404, { detail: 'no node !a1b2c3d4' }, undefined))).toBe(
      'No node !a1b2c3d4.',
    );
    expect(plainWords(new TypeError('boom'))).toMatch(/^Something went wrong/);
    expect(
      apiErrorFrom(401, { detail: 'the token has expired', reason: 'expired' }, undefined).extras.reason,
    ).toBe('expired');
    // A body that is not problem details still gives a sentence.
    expect(plainWords(apiErrorFrom(502, '<html>', undefined))).toMatch(/ran into a problem/);
  });

  it('reads Retry-After as seconds or as a date', () => {
    expect(retryAfterSeconds('30', NOW)).toBe(30);
    expect(retryAfterSeconds(new Date(NOW + 90_000).toUTCString(), NOW)).toBe(90);
    expect(retryAfterSeconds('soon', NOW)).toBeUndefined();
    expect(retryAfterSeconds(null, NOW)).toBeUndefined();
  });
});

describe('routes', () => {
  it('maps paths to pages', () => {
    expect(matchRoute('/')).toEqual({ page: 'dashboard' });
    expect(matchRoute('/', '?node=!a1b2c3d4')).toEqual({ page: 'dashboard', focus: '!a1b2c3d4' });
    expect(matchRoute('/nodes/!a1b2c3d4')).toEqual({ page: 'node', nodeId: '!a1b2c3d4' });
    expect(matchRoute('/nodes/%21a1b2c3d4/')).toEqual({ page: 'node', nodeId: '!a1b2c3d4' });
    expect(matchRoute('/chat')).toEqual({ page: 'chat' });
    expect(matchRoute('/chat/!a1b2c3d4')).toEqual({ page: 'chat', nodeId: '!a1b2c3d4' });
    expect(matchRoute('/chat/nonsense')).toEqual({ page: 'not-found', path: '/chat/nonsense' });
    expect(matchRoute('/nodes/%E0%A4%A')).toEqual({ page: 'not-found', path: '/nodes/%E0%A4%A' });
    expect(matchRoute('/elsewhere')).toEqual({ page: 'not-found', path: '/elsewhere' });
    expect(matchRoute('/plans/')).toEqual({ page: 'plans' });
    expect(matchRoute('/admin/billing')).toEqual({ page: 'admin-billing' });
    expect(matchRoute('/admin')).toEqual({ page: 'not-found', path: '/admin' });
  });
});

describe('the coordinate grid', () => {
  it('chooses round steps and labels them with just enough decimals', () => {
    expect(gridStep(0.08, 4)).toBe(0.02);
    expect(gridStep(100, 4)).toBe(20);
    expect(gridValues(47.331, 47.409, 0.02)).toEqual([47.34, 47.36, 47.38, 47.4]);
    expect(gridLabel(47.36, 0.02, 'lat')).toBe('47.36° N');
    expect(gridLabel(-8.5, 0.5, 'lon')).toBe('8.5° W');
    expect(gridLabel(0, 1, 'lon')).toBe('0°');
    expect(gridValues(-180, 180, 0.0001).length).toBe(60);
  });
});

describe('reconnecting', () => {
  it('waits longer after each failure, up to about 15 s, with jitter', () => {
    expect(reconnectDelayMs(0, () => 0.5)).toBe(1_000);
    expect(reconnectDelayMs(2, () => 0.5)).toBe(4_000);
    expect(reconnectDelayMs(50, () => 0.5)).toBe(15_000);
    expect(reconnectDelayMs(50, () => 0)).toBe(12_000);
    expect(reconnectDelayMs(50, () => 1)).toBe(18_000);
  });
});

describe('the session token', () => {
  it('reads expiry and user from the JWT payload, and nothing from garbage', () => {
    const payload = Buffer.from(
      JSON.stringify({ exp: 1_900_000_000, preferred_username: 'ana', sub: 'ana' }),
    ).toString('base64url');
    const token = `eyJhbGciOiJFUzI1NiJ9.${payload}.sig`;
    expect(tokenExpiry(token)).toBe(1_900_000_000_000);
    expect(tokenUsername(token)).toBe('ana');
    expect(tokenExpiry('not-a-token')).toBeUndefined();
    expect(tokenExpiry('a.%%%.c')).toBeUndefined();
  });
});
