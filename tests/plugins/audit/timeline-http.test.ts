/**
 * Issue 29 over HTTP on loopback: an actor's timeline (order, counts per day and service with
 * failures apart, paging, the window), privacy gating of its list and its counts, the pivot
 * filters of GET /api/events (client IP, correlation and session ids, exact target and actor),
 * the event's pivots, and bad input answered with a 400 problem.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditOpenApiDocument } from '../../../plugins/audit/http/openapi.js';
import { Conformance } from '../../http/openapi-conformance.js';
import { type AuditTestApp, idpAuditApp, NO_RATE_LIMITS } from './helpers.js';
import { type LocalIdp, withBearer } from './idp.js';
import { DAY, directoryAudit, managementRecord, signIn, store } from './timeline-records.js';

const ADELE = 'adele@contoso.com';
const NOW = Date.now();
const TODAY = Math.floor(NOW / DAY) * DAY;
/**
 * `n` days ago, half-way between midnight UTC and the time of day now, in whole seconds (the
 * Management API's times have no milliseconds); a second earlier is still the same day.
 */
const daysAgo = (n: number) => TODAY - n * DAY + Math.max(1000, Math.floor((NOW - TODAY) / 2000) * 1000);
const dayOf = (n: number) => new Date(TODAY - n * DAY).toISOString().slice(0, 10);
const CORRELATION = 'c0ffee00-0000-4000-8000-000000000001';

/** Teams and MailItemsAccessed are for the privacy role only. */
const GATED = {
  PRIVACY_SENSITIVE_OPERATIONS: 'MailItemsAccessed',
  PRIVACY_SERVICES: 'teams',
  PRIVACY_SERVICE_ROLES: 'Audit.Privacy',
};

let idp: LocalIdp;
let t: AuditTestApp;
let server: ReturnType<typeof serve>;
let base: string;
let plain: string;
let privileged: string;

beforeAll(async () => {
  ({ idp, t } = await idpAuditApp({ ...GATED, AUDIT_READER_ROLES: 'Audit.Reader', ...NO_RATE_LIMITS }));
  store(t.repos, [
    // Adele, across services and days; two failures.
    directoryAudit({
      at: daysAgo(0),
      actor: ADELE,
      operation: 'Update user',
      ip: '198.51.100.7',
      correlationId: CORRELATION,
    }),
    directoryAudit({
      at: daysAgo(0) - 1000,
      actor: ADELE,
      operation: 'Reset password',
      result: 'failure',
      ip: '198.51.100.7',
    }),
    managementRecord({
      at: daysAgo(1),
      actor: ADELE,
      workload: 'SharePoint',
      source: 'sharepoint',
      operation: 'FileDownloaded',
      target: 'https://contoso.sharepoint.com/Shared/plan.docx',
      extra: { ClientIP: '198.51.100.7:50123', CorrelationId: CORRELATION },
    }),
    managementRecord({
      at: daysAgo(1) - 1000,
      actor: ADELE,
      workload: 'SharePoint',
      source: 'sharepoint',
      operation: 'FileDeleted',
      result: 'Failed',
      target: 'https://contoso.sharepoint.com/Shared/plan.docx',
    }),
    managementRecord({
      at: daysAgo(2),
      actor: ADELE,
      operation: 'Send',
      extra: { ClientIPAddress: '203.0.113.9', SessionId: 'sess-42' },
    }),
    // Hidden from callers without the privacy role: a gated service and a sensitive operation.
    managementRecord({
      at: daysAgo(2) - 1000,
      actor: ADELE,
      workload: 'MicrosoftTeams',
      source: 'teams',
      operation: 'MemberAdded',
      result: 'Failed',
    }),
    managementRecord({
      at: daysAgo(3),
      actor: ADELE,
      operation: 'MailItemsAccessed',
      extra: { ClientIP: '198.51.100.7' },
    }),
    // Outside a 30-day window.
    directoryAudit({ at: daysAgo(40), actor: ADELE, operation: 'Add user' }),
    // Someone else, and a name that merely contains Adele's.
    managementRecord({
      at: daysAgo(0),
      actor: 'bob@contoso.com',
      workload: 'SharePoint',
      source: 'sharepoint',
      operation: 'FileAccessed',
      target: 'https://contoso.sharepoint.com/Shared/plan.docx',
      extra: { ClientIP: '198.51.100.7' },
    }),
    managementRecord({
      at: daysAgo(0),
      actor: `x${ADELE}`,
      operation: 'Send',
      target: 'https://contoso.sharepoint.com/Shared/plan.docx.bak',
    }),
    signIn({
      at: daysAgo(1),
      actor: 'carol@contoso.com',
      ip: '198.51.100.8',
      correlationId: CORRELATION.toUpperCase(),
    }),
  ]);
  plain = await idp.token({ roles: ['Audit.Reader'] });
  privileged = await idp.token({ roles: ['Audit.Reader', 'Audit.Privacy'] });
  await new Promise<void>((resolve) => {
    server = serve({ fetch: t.app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve());
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  (server as Server).closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
  await t.close();
  await idp.stop();
});

// biome-ignore lint/suspicious/noExplicitAny: the tests read bodies of several shapes
async function get(path: string, token = privileged): Promise<{ status: number; type: string; body: any }> {
  const res = await fetch(`${base}${path}`, withBearer(token));
  return { status: res.status, type: res.headers.get('content-type') ?? '', body: await res.json() };
}
const timeline = (query: string, token?: string) => get(`/api/actors/timeline?${query}`, token);
const ops = (body: { data: Array<{ operation: string }> }) => body.data.map((e) => e.operation);

describe('GET /api/actors/timeline', () => {
  it('lists the actor’s events across services newest first, with counts per day and service', async () => {
    const { status, body } = await timeline(`actor=${encodeURIComponent(ADELE.toUpperCase())}`);
    expect(status).toBe(200);
    expect(ops(body)).toEqual([
      'Update user',
      'Reset password',
      'FileDownloaded',
      'FileDeleted',
      'Send',
      'MemberAdded',
      'MailItemsAccessed',
    ]);
    expect(new Set(body.data.map((e: { actor: string }) => e.actor))).toEqual(new Set([ADELE]));
    expect(body.window).toEqual({
      start: new Date(TODAY - 29 * DAY).toISOString(),
      days: 30,
      until: dayOf(0),
    });
    expect(body.counts).toEqual([
      { day: dayOf(3), service: 'exchange', events: 1, failures: 0 },
      { day: dayOf(2), service: 'exchange', events: 1, failures: 0 },
      { day: dayOf(2), service: 'teams', events: 1, failures: 1 },
      { day: dayOf(1), service: 'sharepoint', events: 2, failures: 1 },
      { day: dayOf(0), service: 'directory', events: 2, failures: 1 },
    ]);
    expect(body.totals.events).toBe(7);
    expect(body.totals.failures).toBe(3);
    expect(body.totals.services).toContainEqual({ service: 'sharepoint', events: 2, failures: 1 });
  });

  it('pages with the search’s cursors and keeps the counts for the whole window', async () => {
    const first = await timeline(`actor=${ADELE}&limit=3`);
    expect(ops(first.body)).toEqual(['Update user', 'Reset password', 'FileDownloaded']);
    const second = await timeline(`actor=${ADELE}&limit=3&cursor=${first.body.next_cursor}`);
    expect(ops(second.body)).toEqual(['FileDeleted', 'Send', 'MemberAdded']);
    expect(second.body.totals.events).toBe(7);
    const back = await timeline(`actor=${ADELE}&limit=3&cursor=${second.body.prev_cursor}`);
    expect(ops(back.body)).toEqual(ops(first.body));
  });

  it('narrows to the days asked for, and reaches back to 90', async () => {
    const today = await timeline(`actor=${ADELE}&days=1`);
    expect(ops(today.body)).toEqual(['Update user', 'Reset password']);
    expect(today.body.counts).toEqual([{ day: dayOf(0), service: 'directory', events: 2, failures: 1 }]);
    const all = await timeline(`actor=${ADELE}&days=90`);
    expect(all.body.totals.events).toBe(8);
  });

  it('ends the window on the day asked for, for an incident months ago', async () => {
    // The event 40 days ago, in a week that ends 35 days ago: nothing after that day.
    const { body } = await timeline(`actor=${ADELE}&days=7&until=${dayOf(35)}`);
    expect(ops(body)).toEqual(['Add user']);
    expect(body.window).toEqual({ start: `${dayOf(41)}T00:00:00.000Z`, days: 7, until: dayOf(35) });
    expect(body.counts).toEqual([{ day: dayOf(40), service: 'directory', events: 1, failures: 0 }]);
    // The day itself is in the window, the day after is not.
    expect(ops((await timeline(`actor=${ADELE}&days=1&until=${dayOf(40)}`)).body)).toEqual(['Add user']);
    expect(ops((await timeline(`actor=${ADELE}&days=1&until=${dayOf(41)}`)).body)).toEqual([]);
  });

  it('hides privacy-gated events from the list and from the counts', async () => {
    const { body } = await timeline(`actor=${ADELE}`, plain);
    expect(ops(body)).toEqual(['Update user', 'Reset password', 'FileDownloaded', 'FileDeleted', 'Send']);
    expect(body.counts.map((c: { service: string }) => c.service)).not.toContain('teams');
    expect(body.counts).toContainEqual({ day: dayOf(2), service: 'exchange', events: 1, failures: 0 });
    expect(body.counts.find((c: { day: string }) => c.day === dayOf(3))).toBeUndefined();
    expect(body.totals).toMatchObject({ events: 5, failures: 2 });
    expect(JSON.stringify(body)).not.toMatch(/MemberAdded|MailItemsAccessed/);
  });

  it('answers an actor nobody has seen with an empty timeline', async () => {
    const { status, body } = await timeline('actor=nobody@contoso.com');
    expect(status).toBe(200);
    expect(body).toMatchObject({ data: [], counts: [], totals: { events: 0, failures: 0, services: [] } });
  });

  it('refuses bad input with a 400 problem naming the parameter', async () => {
    for (const [query, field] of [
      ['', 'actor'],
      ['actor=', 'actor'],
      [`actor=${ADELE}&actor=bob@contoso.com`, 'actor'],
      [`actor=${ADELE}&days=0`, 'days'],
      [`actor=${ADELE}&days=91`, 'days'],
      [`actor=${ADELE}&days=abc`, 'days'],
      [`actor=${ADELE}&limit=0`, 'limit'],
      [`actor=${ADELE}&until=2026-02-30`, 'until'],
      [`actor=${ADELE}&until=yesterday`, 'until'],
      [`actor=${ADELE}&until=1999-12-31`, 'until'],
      [`actor=${ADELE}&cursor=nonsense`, 'cursor'],
      ['actor=%01bad', 'actor'],
    ] as const) {
      const res = await timeline(query);
      expect(res.status, query).toBe(400);
      expect(res.type).toContain('application/problem+json');
      expect(
        res.body.errors.map((e: { field: string }) => e.field),
        query,
      ).toContain(field);
    }
  });
});

describe('the OpenAPI document', () => {
  it('describes the timeline’s answers and an event’s pivots as they are', async () => {
    const conformance = new Conformance(auditOpenApiDocument('9.9.9'));
    const check = async (path: string, url: string) => {
      const res = await fetch(`${base}${url}`, withBearer(privileged));
      conformance.check('get', path, { status: res.status, headers: res.headers, text: await res.text() });
    };
    await check('/api/actors/timeline', `/api/actors/timeline?actor=${ADELE}`);
    await check('/api/actors/timeline', '/api/actors/timeline?actor=nobody');
    await check('/api/actors/timeline', '/api/actors/timeline?days=0');
    const [event] = (await get('/api/events?session_id=sess-42')).body.data;
    await check('/api/events/{id}', `/api/events/${event.id}`);
    await check('/api/events', '/api/events?client_ip=198.51.100.7&correlation_id=x&target=y');
  });
});

describe('pivot filters on GET /api/events', () => {
  const search = async (query: string, token?: string) =>
    ops((await get(`/api/events?${query}`, token)).body).sort();

  it('finds exactly the events from one client IP, whatever the port', async () => {
    expect(await search('client_ip=198.51.100.7')).toEqual(
      ['FileAccessed', 'FileDownloaded', 'MailItemsAccessed', 'Reset password', 'Update user'].sort(),
    );
    expect(await search('client_ip=198.51.100.7:443')).toEqual(await search('client_ip=198.51.100.7'));
    expect(await search('client_ip=198.51.100.7', plain)).not.toContain('MailItemsAccessed');
    expect(await search('client_ip=203.0.113.9')).toEqual(['Send']);
  });

  it('finds exactly the events of one correlation id, across sources and letter case', async () => {
    expect(await search(`correlation_id=${CORRELATION}`)).toEqual(
      ['FileDownloaded', 'Sign-in activity', 'Update user'].sort(),
    );
    expect(await search('session_id=sess-42')).toEqual(['Send']);
  });

  it('matches a target and an actor whole, not as a substring', async () => {
    expect(await search('target=https://contoso.sharepoint.com/Shared/plan.docx')).toEqual(
      ['FileAccessed', 'FileDeleted', 'FileDownloaded'].sort(),
    );
    expect(await search(`actor_exact=${ADELE}&days=90`)).toHaveLength(8);
    expect(await search(`actor=${ADELE}`)).toHaveLength(9);
    expect(await search(`client_ip=198.51.100.7&actor_exact=bob@contoso.com`)).toEqual(['FileAccessed']);
  });

  it('names the keys an event carries in its detail', async () => {
    const [event] = (await get(`/api/events?session_id=sess-42`)).body.data;
    const { body } = await get(`/api/events/${event.id}`);
    expect(body.pivots).toEqual({ client_ip: '203.0.113.9', session_id: 'sess-42', target: 'mailbox' });
  });

  it('refuses a pivot value given twice or too long', async () => {
    for (const query of ['client_ip=1.2.3.4&client_ip=5.6.7.8', `target=${'x'.repeat(1025)}`]) {
      const res = await get(`/api/events?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.type).toContain('application/problem+json');
    }
  });
});
