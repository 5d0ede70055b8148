/**
 * Issue 29: an ask about a pivot's events ("Ask about these events" from `/audit?client_ip=…`)
 * keeps the pivot: only the events sharing the key are counted, and the answer says the filter
 * came from the request.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type AuditTestApp, auditApp, jsonInit, NO_RATE_LIMITS } from './helpers.js';
import { managementRecord, store } from './timeline-records.js';

const now = Date.now();
let t: AuditTestApp;

beforeAll(async () => {
  t = await auditApp({ AI_FEATURES_ENABLED: 'true', ...NO_RATE_LIMITS });
  store(t.repos, [
    managementRecord({ at: now - 60_000, actor: 'adele@contoso.com', extra: { ClientIP: '203.0.113.9' } }),
    managementRecord({
      at: now - 120_000,
      actor: 'bob@contoso.com',
      extra: { ClientIP: '203.0.113.9:4000' },
    }),
    managementRecord({ at: now - 180_000, actor: 'carol@contoso.com', extra: { ClientIP: '198.51.100.1' } }),
  ]);
});
afterAll(() => t.close());

it('counts only the events of the pivot it was asked about', async () => {
  const { status, body } = await t.json(
    '/api/ask',
    jsonInit('POST', { question: 'what happened in exchange?', client_ip: '203.0.113.9' }),
  );
  expect(status).toBe(200);
  expect(body.total_matched).toBe(2);
  expect(body.query_info.filters).toContainEqual({
    field: 'client_ip',
    value: '203.0.113.9',
    source: 'request',
  });
  const actors = body.events.map((e: { actor: string }) => e.actor).sort();
  expect(actors).toEqual(['adele@contoso.com', 'bob@contoso.com']);
});
