/**
 * The audit OpenAPI document with AI_FEATURES_ENABLED: valid, listing exactly the routes then
 * mounted (ask, jobs, explain among them), and true of their answers.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditOpenApiDocument } from '../../../plugins/audit/http/openapi.js';
import { type FakeChatCompletions, startFakeChatCompletions } from '../../fakes/llm/fake-chat-completions.js';
import { Conformance, operationsOf } from '../../http/openapi-conformance.js';
import { type AuditTestApp, auditApp, conformingCaller, llmEnv, mountedOperations, seed } from './helpers.js';

const doc = auditOpenApiDocument('9.9.9', { ai: true });
let t: AuditTestApp;
let fake: FakeChatCompletions;
const conformance = new Conformance(doc);

beforeAll(async () => {
  fake = await startFakeChatCompletions();
  t = await auditApp({ ...llmEnv(fake.baseUrl, 'm'), RATE_LIMIT_ASK: '1000/1m' });
  seed(t.repos, [{ source: 'directory', at: Date.now() - 60_000, operation: 'Add user', result: 'failure' }]);
});
afterAll(async () => {
  await t.close();
  await fake.stop();
});

const call = conformingCaller(() => t, conformance);

describe('the document with AI features', () => {
  it('is valid OpenAPI 3.0 and lists exactly the mounted routes', async () => {
    const result = await new Validator().validate(doc as never);
    expect(result.errors).toBeUndefined();
    expect(mountedOperations(t)).toEqual(operationsOf(doc).sort());
    expect(operationsOf(doc)).toEqual(
      expect.arrayContaining(['POST /api/ask', 'GET /api/jobs/{job_id}', 'POST /api/events/{id}/explain']),
    );
  });

  it('agrees with the answers of ask, jobs, explain and features', async () => {
    expect((await call('post', '/api/ask', '/api/ask', { question: 'failures today?' })).status).toBe(200);
    expect((await call('post', '/api/ask', '/api/ask', { question: '' })).status).toBe(400);
    const queued = await call('post', '/api/ask', '/api/ask', { question: 'failures today?', async: true });
    expect(queued.status).toBe(202);
    const id = queued.json().job_id as string;
    let job = await call('get', '/api/jobs/{job_id}', `/api/jobs/${id}`);
    for (let i = 0; i < 200 && job.json().status !== 'succeeded'; i++) {
      await new Promise((r) => setTimeout(r, 10));
      job = await call('get', '/api/jobs/{job_id}', `/api/jobs/${id}`);
    }
    expect(job.json().status).toBe('succeeded');
    expect((await call('get', '/api/jobs/{job_id}', '/api/jobs/nope')).status).toBe(404);
    expect((await call('post', '/api/events/{id}/explain', '/api/events/1/explain')).status).toBe(200);
    expect((await call('post', '/api/events/{id}/explain', '/api/events/99/explain')).status).toBe(404);
    expect((await call('get', '/api/config/features', '/api/config/features')).status).toBe(200);
  });
});
