/**
 * CSV and JSON export of a filtered search, streamed from the server over a real socket.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCsv } from '../../helpers/csv.js';
import { jsonInit, servedExportApp } from './helpers.js';

const T0 = Date.UTC(2025, 4, 1);
const N = 5_000;
let t: Awaited<ReturnType<typeof servedExportApp>>;

beforeAll(async () => {
  t = await servedExportApp(
    Array.from({ length: N }, (_, i) => ({
      at: T0 + i * 1000,
      service: i % 5 === 0 ? 'SharePoint' : 'Exchange',
      actor: i === 7 ? '=HYPERLINK("http://evil.example","click")' : `user${i % 50}@contoso.com`,
      operation: 'FileAccessed',
      target: i === 8 ? 'quarterly, "final" report.xlsx' : `doc-${i}`,
    })),
  );
  await t.request('/api/events/9/tags', jsonInit('PATCH', { tags: ['reviewed', 'suspicious'] }));
  await t.request('/api/events/9/comments', jsonInit('POST', { text: 'looked at it' }));
});
afterAll(() => t.close());

describe('GET /api/events/export', () => {
  it('streams every matching event as CSV (RFC 4180, CRLF), newest first, as an attachment', async () => {
    const res = await fetch(`${t.base}/api/events/export?format=csv`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toMatch(
      /^attachment; filename="audit-events-\d{8}T\d{6}Z\.csv"$/,
    );
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    const text = await res.text();
    expect(text.startsWith('id,timestamp,service,')).toBe(true);
    expect(text.split('\r\n')).toHaveLength(N + 2);
    const rows = parseCsv(text);
    expect(rows[0]).toEqual([
      'id',
      'timestamp',
      'service',
      'operation',
      'result',
      'result_raw',
      'actor',
      'target',
      'tags',
      'comment_count',
      'source',
      'source_id',
      'tenant',
    ]);
    expect(rows).toHaveLength(N + 1);
    expect(rows[1]![0]).toBe(String(N));
    expect(rows[N]![0]).toBe('1');
    const nine = rows.find((r) => r[0] === '9')!;
    expect(nine.slice(8, 10)).toEqual(['reviewed; suspicious', '1']);
    expect(rows.find((r) => r[0] === '9')![1]).toBe(new Date(T0 + 8000).toISOString());
  });

  it('neutralises cells a spreadsheet would run as formulas and quotes commas and quotes', async () => {
    const rows = parseCsv(
      await (await fetch(`${t.base}/api/events/export?actor=${encodeURIComponent('HYPERLINK')}`)).text(),
    );
    expect(rows[1]![6]).toBe(`'=HYPERLINK("http://evil.example","click")`);
    const quoted = parseCsv(await (await fetch(`${t.base}/api/events/export?actor=user8@`)).text());
    expect(quoted.find((r) => r[0] === '9')![7]).toBe('quarterly, "final" report.xlsx');
  });

  it('exports the same events as JSON, filters applied, with tags and comments', async () => {
    const res = await fetch(`${t.base}/api/events/export?format=json&services=sharepoint`);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const events = (await res.json()) as Array<{
      id: string;
      service: string;
      tags: string[];
      comments: unknown[];
    }>;
    expect(events).toHaveLength(N / 5);
    expect(events.every((e) => e.service === 'sharepoint')).toBe(true);
    const search = await t.json('/api/events?services=sharepoint&limit=3');
    expect(events.slice(0, 3)).toEqual(search.body.data);
    const none = await (await fetch(`${t.base}/api/events/export?format=json&actor=nobody`)).json();
    expect(none).toEqual([]);
  });

  it('refuses a bad format and bad filters with 400', async () => {
    const res = await t.json('/api/events/export?format=xlsx');
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ field: 'format', message: 'must be csv or json' }]);
    expect((await t.json('/api/events/export?start=soon')).body.errors[0].field).toBe('start');
  });

  it('runs at most AUDIT_EXPORT_MAX_CONCURRENT exports; a cancelled export frees its slot', async () => {
    // In process, nothing reads the body: the stream holds its first chunk and waits.
    const first = await t.request('/api/events/export');
    expect(first.status).toBe(200);
    const reader = first.body!.getReader();
    await reader.read();
    const second = await t.json('/api/events/export');
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBe('5');
    await reader.cancel();
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 20));
      const res = await t.request('/api/events/export?actor=user1@');
      status = res.status;
      await res.arrayBuffer();
    }
    expect(status).toBe(200);
  });
});
