/**
 * Every bad search input gets a 400 problem naming the field — and free-form input, whatever it
 * is, never gets a 500 or changes anything.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCursor } from '../../../plugins/audit/http/cursor.js';
import { SEARCH_FILTER_FIELDS } from '../../../src/web/src/audit/audit-filters.js';
import { type AuditTestApp, auditApp, jsonInit, seed } from './helpers.js';

let t: AuditTestApp;
beforeAll(async () => {
  t = await auditApp({ RATE_LIMIT_DEFAULT: '1000000/1m', RATE_LIMIT_WRITE: '1000000/1m' });
  seed(
    t.repos,
    Array.from({ length: 30 }, (_, i) => ({ at: Date.UTC(2025, 0, 1) + i * 1000 })),
  );
});
afterAll(() => t.close());

describe('GET /api/events: bad parameters', () => {
  it.each([
    ['limit=0', 'limit', 'must be an integer from 1 to 500'],
    ['limit=501', 'limit', 'must be an integer from 1 to 500'],
    ['limit=ten', 'limit', 'must be an integer from 1 to 500'],
    ['limit=-5', 'limit', 'must be an integer from 1 to 500'],
    [
      'start=yesterday',
      'start',
      'must be an ISO 8601 date-time with Z or an offset, e.g. 2025-05-01T00:00:00Z',
    ],
    ['end=2025-05-01', 'end', 'must be an ISO 8601 date-time with Z or an offset, e.g. 2025-05-01T00:00:00Z'],
    ['start=2025-05-02T00:00:00Z&end=2025-05-01T00:00:00Z', 'end', 'must be after start'],
    ['cursor=garbage!', 'cursor', 'is not a cursor this API issued'],
    ['cursor=eC4xXzE', 'cursor', 'is not a cursor this API issued'],
    [`cursor=${'A'.repeat(300)}`, 'cursor', 'is not a cursor this API issued'],
    // Spaces are allowed since issue 14 (`Device management`); punctuation is not.
    ['services=exch%3Bange', 'services.0', 'a service is letters, digits, spaces, "_", "." or "-"'],
    ['include_tags=ok,%07bell', 'include_tags.1', 'a tag must not contain control characters'],
    [`exclude_tags=${'x'.repeat(65)}`, 'exclude_tags.0', 'a tag must be at most 64 characters'],
    [`actor=${'a'.repeat(257)}`, 'actor', 'must be at most 256 characters'],
    ['actor=a&actor=b', 'actor', 'must be given once'],
    [`services=${Array.from({ length: 21 }, (_, i) => `s${i}`).join(',')}`, 'services', 'at most 20 values'],
  ])('%s → 400 on %s', async (query, field, message) => {
    const res = await t.json(`/api/events?${query}`);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.body).toMatchObject({ status: 400, title: 'Bad Request', request_id: expect.any(String) });
    expect(res.body.errors).toContainEqual({ field, message });
  });

  it('ignores unknown parameters and treats an empty text filter as none', async () => {
    const res = await t.json('/api/events?colour=red&actor=&limit=5');
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(5);
  });

  it('accepts a cursor it issued', async () => {
    const res = await t.json(
      `/api/events?cursor=${encodeCursor('next', { ts: Date.UTC(2025, 0, 1) + 10_000, seq: 11 })}`,
    );
    expect(res.status).toBe(200);
    expect(res.body.data.map((e: { id: string }) => e.id)).toEqual([
      '10',
      '9',
      '8',
      '7',
      '6',
      '5',
      '4',
      '3',
      '2',
      '1',
    ]);
  });

  it('answers 404 with problem details for an unknown event', async () => {
    const res = await t.json('/api/events/777');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ status: 404, detail: 'no event with id 777' });
  });

  it('never answers 5xx to free-form query strings', async () => {
    const keys = fc.constantFrom(...SEARCH_FILTER_FIELDS, 'limit', 'cursor', 'format', 'x');
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(keys, fc.string({ unit: 'binary', maxLength: 40 })), { maxLength: 6 }),
        async (pairs) => {
          const q = new URLSearchParams(pairs).toString();
          for (const path of ['/api/events', '/api/events/export']) {
            const res = await t.request(`${path}?${q}`);
            expect([200, 400]).toContain(res.status);
            if (res.status === 400) {
              const body = (await res.json()) as { errors: unknown[] };
              expect(body.errors.length).toBeGreaterThan(0);
            } else {
              await res.arrayBuffer();
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('never answers 5xx or changes anything on free-form JSON bodies', async () => {
    const before = t.db.prepare('SELECT seq, tags, comment_count FROM audit_events ORDER BY seq').all();
    const trailBefore = t.db.prepare('SELECT count(*) FROM audit_trail').pluck().get() as number;
    let sent = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/api/events/1/tags', '/api/events/1/comments', '/api/events/bulk-tags'),
        // Bodies naming the real fields could be valid and change things: only refusable ones here.
        fc.anything().filter((v) => !(typeof v === 'object' && v !== null && ('tags' in v || 'text' in v))),
        async (path, body) => {
          const text = JSON.stringify(body) ?? 'undefined';
          const res = await t.request(
            path,
            jsonInit(path.endsWith('tags') && !path.includes('bulk') ? 'PATCH' : 'POST', text),
          );
          sent++;
          expect(res.status).toBeGreaterThanOrEqual(400);
          expect(res.status).toBeLessThan(500);
          expect(res.headers.get('content-type')).toBe('application/problem+json');
        },
      ),
      { numRuns: 200 },
    );
    expect(t.db.prepare('SELECT seq, tags, comment_count FROM audit_events ORDER BY seq').all()).toEqual(
      before,
    );
    // Refused mutations are still mutating requests: each one is in the trail.
    expect(t.db.prepare('SELECT count(*) FROM audit_trail').pluck().get()).toBe(trailBefore + sent);
  });
});
