/**
 * `GET /api/events` over thousands of events: every filter and cursor paging in both directions,
 * checked against a plain model of the same events; text filters are literal.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prng } from '../../../scripts/bench/lib/readings.js';
import { type AuditTestApp, auditApp, type SeedEvent, seed } from './helpers.js';

const T0 = Date.UTC(2025, 4, 1);
const SERVICES = ['Exchange', 'SharePoint', 'MicrosoftTeams', 'OneDrive'];
const ACTORS = [
  'alice@contoso.com',
  'bob.smith@contoso.com',
  'a%b@contoso.com',
  'aXb@contoso.com',
  'under_score@contoso.com',
  'underXscore@contoso.com',
  'regex.*(x)@contoso.com',
  'Ünïcode.Émile@contoso.com',
  'Sync Service App',
];
const OPERATIONS = ['MailItemsAccessed', 'FileAccessed', 'FileDeleted', 'MemberAdded', 'Send', 'SendAs'];
const RESULTS = ['Succeeded', 'Failed', 'PartiallySucceeded', 'True'];
const TAGS = ['reviewed', 'suspicious', 'incident-42', 'Ünï tag'];
const N = 3000;

interface ModelEvent {
  id: number;
  ts: number;
  service: string;
  actor: string;
  operation: string;
  result: string;
  result_raw: string;
  tags: string[];
}

let t: AuditTestApp;
let model: ModelEvent[];

beforeAll(async () => {
  t = await auditApp({ RATE_LIMIT_DEFAULT: '1000000/1m' });
  const r = prng(7);
  const pick = <T>(list: readonly T[]) => list[Math.floor(r() * list.length)]!;
  const events: SeedEvent[] = [];
  for (let i = 0; i < N; i++) {
    // Steps of whole minutes with repeats, so many events share a timestamp: ties break by id.
    const at = T0 + Math.floor(r() * 600) * 60_000;
    events.push({
      at,
      service: pick(SERVICES),
      actor: pick(ACTORS),
      operation: pick(OPERATIONS),
      result: pick(RESULTS),
      id: `e${i}`,
    });
  }
  seed(t.repos, events);
  const rows = t.db.prepare('SELECT seq FROM audit_events ORDER BY seq').pluck().all() as number[];
  for (const seq of rows) {
    const n = Math.floor(r() * 10);
    if (n < 3) t.repos.annotations.setTags(seq, TAGS.slice(n, n + 1 + (seq % 2)));
  }
  const all: ModelEvent[] = [];
  // The model: every event as the single-event route shows it.
  for (const seq of rows) {
    const { body } = await t.json(`/api/events/${seq}`);
    all.push({
      id: seq,
      ts: Date.parse(body.timestamp),
      service: body.service,
      actor: body.actor,
      operation: body.operation,
      result: body.result,
      result_raw: body.result_raw,
      tags: body.tags,
    });
  }
  model = all.sort((a, b) => b.ts - a.ts || b.id - a.id);
});
afterAll(() => t.close());

interface Filters {
  services?: string[];
  actor?: string;
  operation?: string;
  result?: string;
  start?: number;
  end?: number;
  include_tags?: string[];
  exclude_tags?: string[];
}

function matches(e: ModelEvent, f: Filters): boolean {
  const has = (v: string, needle: string) => v.toLowerCase().includes(needle.toLowerCase());
  return (
    (!f.services?.length || f.services.includes(e.service)) &&
    (f.actor === undefined || has(e.actor, f.actor)) &&
    (f.operation === undefined || has(e.operation, f.operation)) &&
    (f.result === undefined || has(e.result, f.result) || has(e.result_raw, f.result)) &&
    (f.start === undefined || e.ts >= f.start) &&
    (f.end === undefined || e.ts < f.end) &&
    (f.include_tags ?? []).every((tag) => e.tags.includes(tag)) &&
    !(f.exclude_tags ?? []).some((tag) => e.tags.includes(tag))
  );
}

function query(f: Filters, extra: Record<string, string> = {}): URLSearchParams {
  const q = new URLSearchParams(extra);
  for (const s of f.services ?? []) q.append('services', s);
  if (f.actor !== undefined) q.set('actor', f.actor);
  if (f.operation !== undefined) q.set('operation', f.operation);
  if (f.result !== undefined) q.set('result', f.result);
  if (f.start !== undefined) q.set('start', new Date(f.start).toISOString());
  if (f.end !== undefined) q.set('end', new Date(f.end).toISOString());
  if (f.include_tags?.length) q.set('include_tags', f.include_tags.join(','));
  if (f.exclude_tags?.length) q.set('exclude_tags', f.exclude_tags.join(','));
  return q;
}

/** Every page forward, then every page back from the last one; returns both id sequences. */
async function walk(
  f: Filters,
  limit: number,
): Promise<{ forward: number[]; backward: number[]; pages: number }> {
  const forward: number[] = [];
  const pages: Array<{ ids: number[]; prev: string | null }> = [];
  let cursor: string | null = null;
  for (let guard = 0; guard < 10_000; guard++) {
    const q = query(f, { limit: String(limit), ...(cursor ? { cursor } : {}) });
    const res = await t.json(`/api/events?${q}`);
    expect(res.status).toBe(200);
    const ids = res.body.data.map((e: { id: string }) => Number(e.id));
    expect(ids.length).toBeLessThanOrEqual(limit);
    forward.push(...ids);
    pages.push({ ids, prev: res.body.prev_cursor });
    cursor = res.body.next_cursor;
    if (!cursor) break;
  }
  const backward: number[] = [];
  let prev = pages[pages.length - 1]?.prev ?? null;
  for (let guard = 0; prev && guard < 10_000; guard++) {
    const res = await t.json(`/api/events?${query(f, { limit: String(limit), cursor: prev })}`);
    expect(res.status).toBe(200);
    backward.unshift(...res.body.data.map((e: { id: string }) => Number(e.id)));
    prev = res.body.prev_cursor;
  }
  return { forward, backward: [...backward, ...(pages[pages.length - 1]?.ids ?? [])], pages: pages.length };
}

describe('GET /api/events paging', () => {
  it('walks all 3000 events forward and back, newest first, ties broken by id', async () => {
    const { forward, backward, pages } = await walk({}, 100);
    expect(pages).toBe(30);
    expect(forward).toEqual(model.map((e) => e.id));
    expect(backward).toEqual(forward);
  });

  it('the first page has no prev_cursor and the last no next_cursor', async () => {
    const first = await t.json('/api/events?limit=10');
    expect(first.body.prev_cursor).toBeNull();
    expect(first.body.next_cursor).toEqual(expect.any(String));
    expect(first.body).toMatchObject({ limit: 10 });
    const all = await t.json('/api/events?limit=500&services=OneDrive&actor=alice');
    expect(all.body.next_cursor).toBeNull();
  });

  it.each<[string, Filters]>([
    ['several services', { services: ['exchange', 'teams'] }],
    ['one service', { services: ['onedrive'] }],
    ['an actor substring matching several actors', { actor: 'SCORE' }],
    ['an operation substring matching several operations', { operation: 'file' }],
    ['a result', { result: 'failure' }],
    ['a raw result', { result: 'partially' }],
    ['a time window', { start: T0 + 100 * 60_000, end: T0 + 130 * 60_000 }],
    ['a tag', { include_tags: ['suspicious'] }],
    ['two tags', { include_tags: ['suspicious', 'incident-42'] }],
    ['excluded tags', { exclude_tags: ['reviewed', 'Ünï tag'] }],
    ['services and an actor', { services: ['exchange', 'sharepoint'], actor: 'contoso' }],
    // The rarer of service and result drives the walk (event-query.ts `driver`): both ways.
    [
      'common services and a rare result',
      { services: ['exchange', 'sharepoint', 'teams'], result: 'failure' },
    ],
    ['a rare service and a common result', { services: ['onedrive'], result: 'success', actor: 'contoso' }],
    [
      'services, a tag and a window',
      { services: ['sharepoint', 'onedrive'], include_tags: ['reviewed'], start: T0 + 60 * 60_000 },
    ],
  ])('filters by %s, forward and back', async (_name, f) => {
    const expected = model.filter((e) => matches(e, f)).map((e) => e.id);
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(N);
    const { forward, backward } = await walk(f, 37);
    expect(forward).toEqual(expected);
    expect(backward).toEqual(expected);
  });

  it('agrees with the model for any combination of filters, in both directions', async () => {
    const filters = fc.record(
      {
        services: fc.subarray(['exchange', 'sharepoint', 'teams', 'onedrive']),
        actor: fc.constantFrom('a%b', 'a_b', 'under_', '_', '%', '.*(', 'CONTOSO', 'émile', 'smith', 'zzz'),
        operation: fc.constantFrom('send', 'File', 'accessed', 'nope'),
        result: fc.constantFrom('success', 'fail', 'Partially', 'true'),
        start: fc.integer({ min: 0, max: 600 }).map((m) => T0 + m * 60_000),
        span: fc.integer({ min: 1, max: 600 }).map((m) => m * 60_000),
        include_tags: fc.subarray(TAGS, { maxLength: 2 }),
        exclude_tags: fc.subarray(TAGS, { maxLength: 2 }),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(filters, fc.integer({ min: 7, max: 250 }), async (g, limit) => {
        const f: Filters = {
          ...g,
          ...(g.start !== undefined && g.span !== undefined ? { end: g.start + g.span } : {}),
        };
        delete (f as { span?: number }).span;
        const expected = model.filter((e) => matches(e, f)).map((e) => e.id);
        const { forward, backward } = await walk(f, limit);
        expect(forward).toEqual(expected);
        expect(backward).toEqual(expected);
      }),
      { numRuns: 60 },
    );
  });

  it('matches text literally: % and _ are not wildcards, regex characters are just characters', async () => {
    const actors = async (actor: string) =>
      new Set(
        (await t.json(`/api/events?limit=500&actor=${encodeURIComponent(actor)}`)).body.data.map(
          (e: { actor: string }) => e.actor,
        ),
      );
    expect([...(await actors('a%b'))]).toEqual(['a%b@contoso.com']);
    expect([...(await actors('under_score'))]).toEqual(['under_score@contoso.com']);
    expect([...(await actors('.*('))]).toEqual(['regex.*(x)@contoso.com']);
    expect((await actors('%')).size).toBe(1);
  });

  it('keeps a cursor valid when the filters change (it names a position, not a page)', async () => {
    const page = await t.json('/api/events?limit=50');
    const next = await t.json(`/api/events?limit=50&services=exchange&cursor=${page.body.next_cursor}`);
    expect(next.status).toBe(200);
    const last = model.find((e) => e.id === Number(page.body.data[49].id))!;
    for (const e of next.body.data) {
      expect(
        Date.parse(e.timestamp) < last.ts || (Date.parse(e.timestamp) === last.ts && Number(e.id) < last.id),
      ).toBe(true);
      expect(e.service).toBe('exchange');
    }
  });
});
