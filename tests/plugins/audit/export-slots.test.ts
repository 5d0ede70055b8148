/**
 * Issue 14, defect 1: an export takes one of AUDIT_EXPORT_MAX_CONCURRENT slots, and every way
 * out of it gives the slot back — HEAD (which never reads the body), a client that goes away
 * mid-stream, and an error mid-stream. With one slot, a leak shows as a 429 on the next export.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { servedExportApp } from './helpers.js';

const T0 = Date.UTC(2025, 4, 1);
let t: Awaited<ReturnType<typeof servedExportApp>>;

beforeAll(async () => {
  // Many chunks of 2,000 rows (more than socket buffers hold), so a stream is still open when the test interferes.
  t = await servedExportApp(
    Array.from({ length: 60_000 }, (_, i) => ({ at: T0 + i * 1000, actor: `user${i % 40}@contoso.com` })),
  );
});
afterAll(() => t.close());

/** A whole export, read to the end: 200 when a slot was free. */
async function fullExport(): Promise<number> {
  const res = await t.request('/api/events/export?format=csv');
  await res.text();
  return res.status;
}

/** The slot comes back when the server notices the client left; ask until it has (bounded). */
async function eventuallyExports(): Promise<number> {
  let status = 0;
  for (let i = 0; i < 200; i++) {
    status = await fullExport();
    if (status === 200) return status;
    await new Promise((r) => setTimeout(r, 10));
  }
  return status;
}

describe('export slots', () => {
  it('HEAD answers the export headers without taking a slot', async () => {
    for (let i = 0; i < 3; i++) {
      const head = await t.request('/api/events/export?format=json', { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-type')).toMatch(/^application\/json/);
      expect(head.headers.get('content-disposition')).toMatch(/attachment; filename="audit-events-.*\.json"/);
      expect(await head.text()).toBe('');
    }
    expect(await fullExport()).toBe(200);
  });

  it('HEAD over a real socket leaves export working', async () => {
    for (let i = 0; i < 2; i++) {
      expect((await fetch(`${t.base}/api/events/export`, { method: 'HEAD' })).status).toBe(200);
    }
    expect(await fullExport()).toBe(200);
  });

  it('a second export while one runs is told to retry, and the first one gives its slot back at the end', async () => {
    const first = await t.request('/api/events/export?format=csv');
    const refused = await t.json('/api/events/export?format=csv');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('5');
    await first.text();
    expect(await fullExport()).toBe(200);
  });

  it('a client that goes away mid-stream gives the slot back', async () => {
    const abort = new AbortController();
    const res = await fetch(`${t.base}/api/events/export?format=csv`, { signal: abort.signal });
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value).startsWith('id,timestamp,')).toBe(true);
    // Still streaming: the slot is taken.
    expect((await t.json('/api/events/export')).status).toBe(429);
    abort.abort();
    await reader.cancel().catch(() => undefined);
    expect(await eventuallyExports()).toBe(200);
  });

  it('a reader that cancels the body gives the slot back', async () => {
    const res = await t.request('/api/events/export?format=json');
    expect((await t.json('/api/events/export')).status).toBe(429);
    await res.body!.cancel();
    expect(await fullExport()).toBe(200);
  });

  it('an error mid-stream ends the body with an error and gives the slot back', async () => {
    const res = await t.request('/api/events/export?format=csv');
    const reader = res.body!.getReader();
    // The first chunk is already read ahead; the next one finds the table gone.
    t.db.exec('ALTER TABLE audit_events RENAME TO audit_events_away');
    let failed = false;
    try {
      for (;;) {
        const { done } = await reader.read();
        if (done) break;
      }
    } catch {
      failed = true;
    } finally {
      t.db.exec('ALTER TABLE audit_events_away RENAME TO audit_events');
    }
    expect(failed).toBe(true);
    expect(await fullExport()).toBe(200);
  });
});
