/**
 * Tags (one event and in bulk) and comments: what a user changes, and that refused requests
 * change nothing.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type AuditTestApp, auditApp, jsonInit, seed } from './helpers.js';

const T0 = Date.UTC(2025, 4, 1);
let t: AuditTestApp;

beforeEach(async () => {
  t = await auditApp({ RATE_LIMIT_WRITE: '100000/1m', RATE_LIMIT_DEFAULT: '100000/1m' });
  seed(
    t.repos,
    Array.from({ length: 40 }, (_, i) => ({
      at: T0 + i * 60_000,
      service: i % 2 ? 'Exchange' : 'SharePoint',
      actor: i < 10 ? 'mallory@contoso.com' : 'alice@contoso.com',
      operation: i % 4 === 0 ? 'FileDeleted' : 'MailItemsAccessed',
    })),
  );
});
afterEach(() => t.close());

const snapshot = () => t.db.prepare('SELECT seq, tags, comment_count FROM audit_events ORDER BY seq').all();
const tagRows = () => t.db.prepare('SELECT count(*) FROM audit_event_tags').pluck().get();

describe('tags of one event', () => {
  it('PATCH replaces the tags, and the tag filter finds the event', async () => {
    const res = await t.json(
      '/api/events/3/tags',
      jsonInit('PATCH', { tags: ['suspicious', 'reviewed', 'suspicious'] }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: '3', tags: ['suspicious', 'reviewed'] });
    const again = await t.json('/api/events/3/tags', jsonInit('PATCH', { tags: ['reviewed'] }));
    expect(again.body.tags).toEqual(['reviewed']);
    expect((await t.json('/api/events?include_tags=suspicious')).body.data).toEqual([]);
    expect(
      (await t.json('/api/events?include_tags=reviewed')).body.data.map((e: { id: string }) => e.id),
    ).toEqual(['3']);
    expect(tagRows()).toBe(1);
  });

  it.each([
    ['tags missing', {}, 'tags'],
    ['not a list', { tags: 'a' }, 'tags'],
    ['an empty tag', { tags: [''] }, 'tags.0'],
    ['a tag with a comma', { tags: ['a,b'] }, 'tags.0'],
    ['a tag too long', { tags: ['x'.repeat(65)] }, 'tags.0'],
    ['a control character', { tags: ['a\u0007'] }, 'tags.0'],
    ['too many tags', { tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, 'tags'],
    ['an unknown field', { tags: ['a'], colour: 'red' }, '(body)'],
  ])('refuses %s with a 400 naming the field, changing nothing', async (_name, body, field) => {
    const before = snapshot();
    const res = await t.json('/api/events/3/tags', jsonInit('PATCH', body));
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    expect(snapshot()).toEqual(before);
  });

  it('answers 404 for an unknown event and 400 for a malformed id', async () => {
    const unknown = await t.json('/api/events/99999/tags', jsonInit('PATCH', { tags: ['a'] }));
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toBe('no event with id 99999');
    const malformed = await t.json('/api/events/abc/tags', jsonInit('PATCH', { tags: ['a'] }));
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors).toEqual([{ field: 'id', message: 'is not an event id' }]);
    expect((await t.json('/api/events/0')).status).toBe(400);
    expect((await t.json('/api/events/12345678901234567890')).status).toBe(400);
  });

  it('refuses bodies that are not JSON (415) or not valid JSON (400)', async () => {
    const text = await t.json('/api/events/3/tags', {
      method: 'PATCH',
      headers: { 'content-type': 'text/plain' },
      body: 'tags',
    });
    expect(text.status).toBe(415);
    const broken = await t.json('/api/events/3/tags', jsonInit('PATCH', '{"tags": ['));
    expect(broken.status).toBe(400);
    expect(broken.body.detail).toBe('the request body is not valid JSON');
  });
});

describe('comments', () => {
  it('adds a comment with the caller as author, shown on the event and in search', async () => {
    const res = await t.json(
      '/api/events/5/comments',
      jsonInit('POST', { text: '  checked with the mailbox owner  ' }),
    );
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe('/api/events/5');
    expect(res.body).toMatchObject({ author: 'anonymous', text: 'checked with the mailbox owner' });
    expect(Date.parse(res.body.created_at)).toBeGreaterThan(0);
    const event = await t.json('/api/events/5');
    expect(event.body.comments).toEqual([res.body]);
    const search = await t.json('/api/events?limit=100');
    expect(search.body.data.find((e: { id: string }) => e.id === '5').comments).toEqual([res.body]);
  });

  it.each([
    ['an oversized comment', { text: 'x'.repeat(2001) }, 400, 'text'],
    ['an empty comment', { text: '   ' }, 400, 'text'],
    ['no text', {}, 400, 'text'],
  ])('refuses %s, changing nothing', async (_name, body, status, field) => {
    const before = snapshot();
    const res = await t.json('/api/events/5/comments', jsonInit('POST', body));
    expect(res.status).toBe(status);
    expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual([field]);
    expect(snapshot()).toEqual(before);
  });

  it('refuses a body over 64 KiB with 413 before reading it', async () => {
    const res = await t.json('/api/events/5/comments', jsonInit('POST', { text: 'x'.repeat(70_000) }));
    expect(res.status).toBe(413);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
  });

  it('answers 404 for a comment on an unknown event', async () => {
    const res = await t.json('/api/events/4242/comments', jsonInit('POST', { text: 'hello' }));
    expect(res.status).toBe(404);
    expect(t.db.prepare('SELECT count(*) FROM audit_event_comments').pluck().get()).toBe(0);
  });
});

describe('POST /api/events/bulk-tags', () => {
  it('appends tags to every event matching the filters and reports the counts', async () => {
    await t.json('/api/events/1/tags', jsonInit('PATCH', { tags: ['incident-7'] }));
    const res = await t.json(
      '/api/events/bulk-tags',
      jsonInit('POST', { filters: { actor: 'mallory' }, tags: ['incident-7'] }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      mode: 'append',
      tags: ['incident-7'],
      matched: 10,
      updated: 9,
      unchanged: 1,
      truncated: false,
      limit: 10_000,
    });
    const tagged = await t.json('/api/events?include_tags=incident-7&limit=100');
    expect(tagged.body.data.every((e: { actor: string }) => e.actor === 'mallory@contoso.com')).toBe(true);
    expect(tagged.body.data).toHaveLength(10);
  });

  it('replaces tags in replace mode, keeping the tag index in step', async () => {
    await t.json(
      '/api/events/bulk-tags',
      jsonInit('POST', { filters: { services: ['exchange'] }, tags: ['a', 'b'] }),
    );
    const res = await t.json(
      '/api/events/bulk-tags',
      jsonInit('POST', {
        filters: { services: 'exchange,sharepoint', actor: 'alice' },
        tags: ['c'],
        mode: 'replace',
      }),
    );
    // alice: events 10..39, 15 of them Exchange (tagged a, b before) and 15 SharePoint.
    expect(res.body).toMatchObject({ mode: 'replace', matched: 30, updated: 30 });
    expect((await t.json('/api/events?include_tags=c&limit=100')).body.data).toHaveLength(30);
    expect((await t.json('/api/events?include_tags=a&limit=100')).body.data).toHaveLength(5);
    expect((await t.json('/api/events?include_tags=a&exclude_tags=c&limit=100')).body.data).toHaveLength(5);
    expect(tagRows()).toBe(5 * 2 + 30);
  });

  it('updates at most 10,000 events, the newest, and says the result was truncated', async () => {
    seed(
      t.repos,
      Array.from({ length: 10_050 }, (_, i) => ({
        at: T0 + 86_400_000 + i * 1000,
        actor: 'bulk@contoso.com',
        id: `bulk-${i}`,
      })),
    );
    const res = await t.json(
      '/api/events/bulk-tags',
      jsonInit('POST', { filters: { actor: 'bulk@' }, tags: ['mass'] }),
    );
    expect(res.body).toMatchObject({ matched: 10_000, updated: 10_000, truncated: true });
    const oldest = t.db
      .prepare("SELECT min(ts) FROM audit_events WHERE tags LIKE '%mass%'")
      .pluck()
      .get() as number;
    expect(oldest).toBe(T0 + 86_400_000 + 50 * 1000);
  });

  it.each([
    ['filters matching nothing', { filters: { actor: 'nobody-at-all' }, tags: ['x'] }, 422, undefined],
    ['no filters', { tags: ['x'] }, 400, 'filters'],
    ['an unknown mode', { filters: { actor: 'mallory' }, tags: ['x'], mode: 'merge' }, 400, 'mode'],
    ['append without tags', { filters: { actor: 'mallory' }, tags: [] }, 400, 'tags'],
    ['a bad date', { filters: { start: 'yesterday' }, tags: ['x'] }, 400, 'filters.start'],
    [
      'an end before start',
      { filters: { start: '2025-05-02T00:00:00Z', end: '2025-05-01T00:00:00Z' }, tags: ['x'] },
      400,
      'filters.end',
    ],
    ['an unknown filter', { filters: { colour: 'red' }, tags: ['x'] }, 400, 'filters'],
    ['a bad tag', { filters: { actor: 'mallory' }, tags: ['a,b'] }, 400, 'tags.0'],
  ])('refuses %s, changing nothing', async (_name, body, status, field) => {
    const before = snapshot();
    const res = await t.json('/api/events/bulk-tags', jsonInit('POST', body));
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    if (field) expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    expect(snapshot()).toEqual(before);
  });

  it('refuses the whole update when an event would end up with more than 50 tags', async () => {
    await t.json(
      '/api/events/2/tags',
      jsonInit('PATCH', { tags: Array.from({ length: 50 }, (_, i) => `t${i}`) }),
    );
    const before = snapshot();
    const res = await t.json(
      '/api/events/bulk-tags',
      jsonInit('POST', { filters: { actor: 'mallory' }, tags: ['one-more'] }),
    );
    expect(res.status).toBe(422);
    expect(res.body.errors[0].field).toBe('tags');
    expect(snapshot()).toEqual(before);
  });
});
