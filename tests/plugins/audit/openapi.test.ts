/**
 * The audit plugin's OpenAPI document: valid OpenAPI 3.0, listing every route the plugin mounts,
 * and true of a representative set of operations driven on the plugin built as the hub builds it
 * (real SQLite file): each answer's status is documented and its body valid against the schema.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditOpenApiDocument } from '../../../plugins/audit/http/openapi.js';
import { Conformance, operationsOf } from '../../http/openapi-conformance.js';
import { type AuditTestApp, auditApp, conformingCaller, mountedOperations, seed } from './helpers.js';

const doc = auditOpenApiDocument('9.9.9');
const SECRET = 'a-client-state-of-some-length';
const T0 = Date.UTC(2025, 0, 1);

describe('the audit OpenAPI document', () => {
  it('is a valid OpenAPI 3.0 document', async () => {
    const result = await new Validator().validate(doc as never);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
  });

  it('documents the search envelope, the optional bearer check and the rate limit', () => {
    const search = doc.paths['/api/events']!.get!;
    expect(search.security).toEqual([{ bearerAuth: [] }, {}]);
    expect(search.responses['429']!.headers).toHaveProperty('Retry-After');
    expect(search.parameters!.find((p) => p.name === 'limit')!.schema).toEqual({
      type: 'integer',
      minimum: 1,
      maximum: 500,
      default: 50,
    });
    expect(search.parameters!.find((p) => p.name === 'start')!.schema).toMatchObject({
      type: 'string',
      format: 'date-time',
    });
  });
});

describe('the document and the audit routes agree', () => {
  let t: AuditTestApp;
  const conformance = new Conformance(doc);

  beforeAll(async () => {
    t = await auditApp({
      RATE_LIMIT_DEFAULT: '1000000/1m',
      RATE_LIMIT_WRITE: '1000000/1m',
      WEBHOOK_CLIENT_SECRET: SECRET,
    });
    seed(
      t.repos,
      Array.from({ length: 12 }, (_, i) => ({
        at: T0 + i * 1000,
        actor: i % 2 ? 'alice@contoso.com' : 'bob',
      })),
    );
  });
  afterAll(() => t?.close());

  const call = conformingCaller(() => t, conformance);

  it('mounts exactly the routes the document lists', () => {
    expect(mountedOperations(t)).toEqual(operationsOf(doc).sort());
  });

  it('searches and pages', async () => {
    const first = await call('get', '/api/events', '/api/events?limit=5');
    expect(first.status).toBe(200);
    const next = first.json().next_cursor as string;
    const second = await call('get', '/api/events', `/api/events?limit=5&cursor=${next}`);
    expect(second.json().prev_cursor).toEqual(expect.any(String));
    expect((await call('get', '/api/events', '/api/events?limit=0')).status).toBe(400);
    expect((await call('get', '/api/events', '/api/events?cursor=nope')).status).toBe(400);
  });

  it('shows, tags and comments one event', async () => {
    expect((await call('get', '/api/events/{id}', '/api/events/3')).status).toBe(200);
    expect((await call('get', '/api/events/{id}', '/api/events/999')).status).toBe(404);
    const tagged = await call('patch', '/api/events/{id}/tags', '/api/events/3/tags', {
      tags: ['incident-7'],
    });
    expect(tagged.json().tags).toEqual(['incident-7']);
    const comment = await call('post', '/api/events/{id}/comments', '/api/events/3/comments', {
      text: 'seen',
    });
    expect(comment.status).toBe(201);
    expect(comment.headers.get('location')).toBe('/api/events/3');
  });

  it('bulk-tags and exports', async () => {
    const bulk = await call('post', '/api/events/bulk-tags', '/api/events/bulk-tags', {
      filters: { actor: 'alice' },
      tags: ['reviewed'],
    });
    expect(bulk.json()).toMatchObject({ matched: 6, updated: 6 });
    const none = await call('post', '/api/events/bulk-tags', '/api/events/bulk-tags', {
      filters: { actor: 'nobody-at-all' },
      tags: ['x'],
    });
    expect(none.status).toBe(422);
    const json = await call('get', '/api/events/export', '/api/events/export?format=json&actor=alice');
    expect(json.json()).toHaveLength(6);
    expect((await call('get', '/api/events/export', '/api/events/export')).status).toBe(200);
  });

  it('answers the operational and frontend routes', async () => {
    expect((await call('get', '/api/filter-options', '/api/filter-options')).status).toBe(200);
    expect((await call('get', '/api/source-health', '/api/source-health')).status).toBe(200);
    expect((await call('post', '/api/fetch', '/api/fetch')).status).toBe(409);
    expect((await call('get', '/api/config/features', '/api/config/features')).status).toBe(200);
    expect((await call('get', '/api/config/auth', '/api/config/auth')).status).toBe(200);
    expect((await call('get', '/api/version', '/api/version')).status).toBe(200);
  });

  it('answers the directory webhook', async () => {
    const path = '/api/webhooks/directory';
    const validation = await call('post', path, `${path}?validationToken=hello`);
    expect(validation.text).toBe('hello');
    // No collection configured here: a valid notification says so (issue 14), as documented.
    expect((await call('post', path, path, { value: [{ clientState: SECRET }] })).status).toBe(409);
    expect((await call('post', path, path, { value: [{ clientState: 'wrong' }] })).status).toBe(403);
  });
});
