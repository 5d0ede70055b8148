/**
 * Explain (spec "Ask behaviour" 9, "Privacy gating": 403 for a gated event) and background asks
 * (spec "Ask behaviour" 10, GET /api/jobs/{job_id}): owner-only, privacy-gated, surviving a
 * restart, expiring. Signed-in callers come from a local identity provider.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AskService } from '../../../plugins/audit/ask/ask-service.js';
import { EXPLAIN_SYSTEM_PROMPT } from '../../../plugins/audit/ask/prompt.js';
import { sqliteBackend } from '../../../plugins/audit/cache/sqlite.js';
import { ANONYMOUS } from '../../../plugins/audit/http/context.js';
import { PrivacyPolicy } from '../../../plugins/audit/http/privacy.js';
import { AskJobRunnerActor, JOB_TTL_MS } from '../../../plugins/audit/jobs/job-runner-actor.js';
import { NO_MODEL } from '../../../plugins/audit/llm/client.js';
import { AuditStore } from '../../../plugins/audit/store/audit-store.js';
import { closeDatabase, openDatabase } from '../../../src/store/database.js';
import { type FakeChatCompletions, startFakeChatCompletions } from '../../fakes/llm/fake-chat-completions.js';
import { type AuditTestApp, idpAuditApp, jsonInit, llmEnv, NO_RATE_LIMITS, seed, silent } from './helpers.js';
import { type LocalIdp, withBearer } from './idp.js';

const now = Date.now();
const HOUR = 3_600_000;
let fake: FakeChatCompletions;
let idp: LocalIdp;
let t: AuditTestApp;
let alice: string;
let bob: string;
let privileged: string;

const seqOf = (service: string) =>
  String(
    t.db.prepare('SELECT seq FROM audit_events WHERE service = ? ORDER BY seq LIMIT 1').pluck().get(service),
  );

async function finished(token: string, id: string) {
  for (let i = 0; i < 200; i++) {
    const res = await t.json(`/api/jobs/${id}`, withBearer(token));
    if (res.status !== 200 || res.body.status === 'succeeded' || res.body.status === 'failed') return res;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('the job did not finish');
}

beforeAll(async () => {
  fake = await startFakeChatCompletions();
  ({ idp, t } = await idpAuditApp({
    PRIVACY_SERVICES: 'teams',
    PRIVACY_SERVICE_ROLES: 'Audit.Privacy',
    AUDIT_READER_ROLES: 'Audit.Reader',
    ...llmEnv(fake.baseUrl),
    LLM_MAX_RETRIES: '0',
    ...NO_RATE_LIMITS,
  }));
  seed(t.repos, [
    {
      source: 'directory',
      at: now - HOUR,
      operation: 'Delete user',
      actor: 'eve@contoso.com',
      target: 'bob@contoso.com',
    },
    { source: 'directory', at: now - 2 * HOUR, operation: 'Add user', actor: 'eve@contoso.com' },
    { at: now - HOUR, service: 'MicrosoftTeams', operation: 'MemberAdded', actor: 'dave@contoso.com' },
  ]);
  alice = await idp.token({ sub: 'alice', roles: ['Audit.Reader'] });
  bob = await idp.token({ sub: 'bob', preferred_username: 'bob@contoso.com', roles: ['Audit.Reader'] });
  privileged = await idp.token({ sub: 'carol', roles: ['Audit.Reader', 'Audit.Privacy'] });
});
afterAll(async () => {
  await t.close();
  await idp.stop();
  await fake.stop();
});
afterEach(() => fake.reset());

describe('explain', () => {
  it('explains one event with the LLM, treating it as data, and caches the answer for 24 hours', async () => {
    fake.script({ kind: 'answer', content: 'Eve deleted Bob; check whether that was planned.' });
    const id = seqOf('directory');
    const first = await t.json(`/api/events/${id}/explain`, withBearer(alice, { method: 'POST' }));
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      event: { id, operation: 'Delete user', actor: 'eve@contoso.com' },
      explanation: 'Eve deleted Bob; check whether that was planned.',
      llm_used: true,
      cached: false,
    });
    const { messages } = fake.requests[0]!.body;
    expect(messages[0].content).toBe(EXPLAIN_SYSTEM_PROMPT);
    expect(messages[1].content).toMatch(/<event>\{"id":"#\d+".*"operation":"Delete user".*\}<\/event>/);
    expect(messages[1].content).toContain('the same actor has 1 other events in the 24 hours before it');
    const second = await t.json(`/api/events/${id}/explain`, withBearer(bob, { method: 'POST' }));
    expect(second.body).toMatchObject({ cached: true, explanation: first.body.explanation });
    expect(fake.requests).toHaveLength(1);
    const ttl = t.db
      .prepare("SELECT expires_at FROM audit_cache WHERE key LIKE 'explain:%'")
      .pluck()
      .get() as number;
    expect(ttl - Date.now()).toBeGreaterThan(23 * HOUR);
  });

  it('falls back to a structured explanation when the LLM fails, caching nothing', async () => {
    fake.script({ kind: 'status', status: 503 });
    const id = String(
      t.db
        .prepare(
          "SELECT e.seq FROM audit_events e JOIN audit_operations o ON o.id = e.operation_id WHERE o.name = 'Add user'",
        )
        .pluck()
        .get(),
    );
    const { body } = await t.json(`/api/events/${id}/explain`, withBearer(alice, { method: 'POST' }));
    expect(body).toMatchObject({ llm_used: false, fallback_reason: 'http_error' });
    expect(body.explanation).toMatch(/^- What: Add user in directory/);
    expect(body.explanation).toContain('- Who: eve@contoso.com');
    expect(body.explanation).toContain('- No language model was used: the language model answered 503');
    expect(t.db.prepare("SELECT count(*) FROM audit_cache WHERE key LIKE 'explain:%'").pluck().get()).toBe(1);
  });

  it('answers 403 for a gated event without the role, 200 with it; 404 unknown; 400 not an id', async () => {
    const gated = seqOf('teams');
    const refused = await t.json(`/api/events/${gated}/explain`, withBearer(alice, { method: 'POST' }));
    expect(refused.status).toBe(403);
    expect(fake.requests).toHaveLength(0);
    expect(
      (await t.json(`/api/events/${gated}/explain`, withBearer(privileged, { method: 'POST' }))).status,
    ).toBe(200);
    expect((await t.json('/api/events/999999/explain', withBearer(alice, { method: 'POST' }))).status).toBe(
      404,
    );
    expect((await t.json('/api/events/abc/explain', withBearer(alice, { method: 'POST' }))).status).toBe(400);
    expect((await t.json('/api/events/1/explain', { method: 'POST' })).status).toBe(401);
  });
});

describe('background asks', () => {
  it('queues, runs and answers only the caller who created the job', async () => {
    const res = await t.json(
      '/api/ask',
      withBearer(alice, jsonInit('POST', { question: 'who ran Delete user in the last day?', async: true })),
    );
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ job_id: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/), status: 'queued' });
    expect(res.headers.get('location')).toBe(`/api/jobs/${res.body.job_id}`);
    const done = await finished(alice, res.body.job_id);
    expect(done.body).toMatchObject({
      job_id: res.body.job_id,
      status: 'succeeded',
      result: { llm_used: true, total_matched: 1, answer: 'Nothing unusual stands out in these events.' },
    });
    const other = await t.json(`/api/jobs/${res.body.job_id}`, withBearer(bob));
    expect(other.status).toBe(404);
    expect(other.body.detail).toBe('no such job (unknown, expired, or not yours)');
    expect((await t.json(`/api/jobs/${res.body.job_id}`)).status).toBe(401);
  });

  it('gates the result with the creator’s roles', async () => {
    const res = await t.json(
      '/api/ask',
      withBearer(
        alice,
        jsonInit('POST', { question: 'everything', services: ['teams', 'directory'], async: true }),
      ),
    );
    const done = await finished(alice, res.body.job_id);
    expect(done.body.result.total_matched).toBe(2);
    expect(JSON.stringify(done.body)).not.toContain('dave@contoso.com');
  });

  it('refuses a bad async ask at once, and 404s unknown ids', async () => {
    const bad = await t.json(
      '/api/ask',
      withBearer(alice, jsonInit('POST', { question: 'between 2025-10-05 and 2025-10-01', async: true })),
    );
    expect(bad.status).toBe(400);
    expect(t.db.prepare('SELECT count(*) FROM audit_jobs WHERE owner LIKE ?').pluck().get('%|alice')).toBe(2);
    expect((await t.json('/api/jobs/AAAAAAAAAAAAAAAAAAAAAA', withBearer(alice))).status).toBe(404);
    expect((await t.json('/api/jobs/..%2F..%2Fetc', withBearer(alice))).status).toBe(404);
  });
});

describe('the job store', () => {
  it('reruns a job left running by a restart, and forgets jobs after 24 hours', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'meshhub-jobs-'));
    const db = openDatabase(join(dir, 'hub.sqlite'));
    let clock = Date.now();
    try {
      const store = new AuditStore(() => db);
      seed(store.repos(), [{ source: 'directory', at: clock - HOUR, operation: 'Add user' }]);
      const backend = sqliteBackend(
        () => store.repos().db,
        () => clock,
      );
      await backend.jobs.create({
        id: 'interrupted',
        owner: 'anonymous',
        request: JSON.stringify({
          input: { question: 'what happened in the last day?', filters: {} },
          caller: ANONYMOUS,
        }),
        ttlMs: JOB_TTL_MS,
      });
      expect((await backend.jobs.claimNext())?.status).toBe('running'); // …and then the process stopped.
      const service = new AskService({
        store,
        privacy: new PrivacyPolicy({ sensitiveOperations: [], services: [], roles: [] }),
        llm: NO_MODEL,
        cache: backend.cache,
        maxEvents: 200,
        log: silent,
        now: () => clock,
      });
      const runner = new AskJobRunnerActor({ backend, service, log: silent });
      await runner.start();
      await runner.idle();
      const job = await backend.jobs.get('interrupted');
      expect(job?.status).toBe('succeeded');
      expect(JSON.parse(job!.result!)).toMatchObject({
        total_matched: 1,
        llm_used: false,
        fallback_reason: 'not_configured',
      });
      await runner.stop();
      clock += JOB_TTL_MS;
      expect(await backend.jobs.get('interrupted')).toBeUndefined();
      expect(await backend.jobs.purgeExpired()).toBe(1);
    } finally {
      closeDatabase(db);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
