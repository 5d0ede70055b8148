/**
 * `POST /api/ask`, `GET /api/jobs/{job_id}` and `POST /api/events/{id}/explain` (spec "Ask
 * behaviour", "Endpoints"), registered only when AI_FEATURES_ENABLED is true (otherwise 404).
 *
 * A job is readable only by the caller who created it: anyone else gets the same 404 as for an
 * unknown or expired id, so job ids reveal nothing about other people's questions.
 */
import type { Hono } from 'hono';
import {
  BODY_PROBLEMS,
  HEADERS,
  type OperationSpec,
  problem,
  type ResponseSpec,
} from '../../../src/http/openapi.js';
import { ProblemError, validationProblem } from '../../../src/http/problem.js';
import type { CacheBackend } from '../cache/store.js';
import { type AuditEnv, callerOf, fieldProblem, jsonBody } from '../http/context.js';
import { parseEventId } from '../http/event-json.js';
import { bodyTooLarge } from '../http/events-routes.js';
import { checkedOperation, signedInOperation } from '../http/operation.js';
import { eventIdPathSchema } from '../http/schemas.js';
import type { AskJobRunnerActor } from '../jobs/job-runner-actor.js';
import { ownerOf } from '../jobs/job-runner-actor.js';
import type { AskService } from './ask-service.js';
import {
  askAcceptedSchema,
  askAnswerSchema,
  askBodySchema,
  explainAnswerSchema,
  jobIdPathSchema,
  jobSchema,
} from './schemas.js';

export interface AiFeatures {
  service: AskService;
  runner: AskJobRunnerActor;
  backend: CacheBackend;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The OpenAPI operations of the AI routes below (listed only when AI_FEATURES_ENABLED, as the routes themselves are). */
export function aiOperations(signedIn: Record<number, ResponseSpec>): OperationSpec[] {
  const limited = problem('The `ask` rate-limit tier (or another) is exceeded.', {
    'Retry-After': HEADERS.retryAfter,
  });
  return [
    checkedOperation(signedIn, {
      method: 'post',
      path: '/api/ask',
      operationId: 'ask',
      tag: 'ask',
      summary: 'A plain-language question about the events, answered by the LLM or as a list',
      description:
        'The question is parsed without an LLM (time range, people, devices, addresses, operations, intent → services); explicit filters win. Up to 1000 matches are fetched and a sample of at most LLM_MAX_EVENTS goes to the model. Without a working model the answer is a bullet list (`llm_used: false`, `fallback_reason`). With `"async": true`: 202 and a job id.',
      body: { schema: askBodySchema },
      responses: {
        200: { description: 'The answer.', body: askAnswerSchema },
        202: {
          description: 'Queued (async); poll the Location.',
          body: askAcceptedSchema,
          headers: { Location: { description: '/api/jobs/{job_id}' } },
        },
        ...BODY_PROBLEMS,
        429: limited,
        503: problem('Sign-in is misconfigured, or the job store is unavailable (async).', {
          'Retry-After': HEADERS.retryAfter,
        }),
      },
    }),
    signedInOperation(signedIn, {
      method: 'get',
      path: '/api/jobs/{job_id}',
      operationId: 'getJob',
      tag: 'ask',
      summary: 'Status and result of a background ask (only for the caller who created it)',
      params: { path: jobIdPathSchema },
      responses: {
        200: { description: 'The job.', body: jobSchema },
        404: problem('Unknown, expired (24 h), or created by someone else.'),
        503: problem('Sign-in is misconfigured, or the job store is unavailable.'),
      },
    }),
    checkedOperation(signedIn, {
      method: 'post',
      path: '/api/events/{id}/explain',
      operationId: 'explainEvent',
      tag: 'ask',
      summary: 'An explanation of one event: what happened, who, whether unusual, what to check',
      params: { path: eventIdPathSchema },
      responses: {
        200: { description: 'The explanation.', body: explainAnswerSchema },
        403: problem(
          'The event is privacy-gated and the caller’s roles do not allow it, or the caller has no reader role (`access`: `read`).',
        ),
        404: problem('No event with this id.'),
        429: limited,
      },
    }),
  ];
}

export function askRoutes(ai: AiFeatures, app: Hono<AuditEnv>): void {
  app.post('/', bodyTooLarge(), async (c) => {
    const parsed = askBodySchema.safeParse(await jsonBody(c));
    if (!parsed.success) throw validationProblem(parsed.error);
    const { question, async: background, ...filters } = parsed.data;
    const caller = callerOf(c);
    const input = { question, filters };
    if (background) {
      ai.service.scope(input, caller); // a bad question is a 400 now, not a failed job later
      let jobId: string;
      try {
        jobId = await ai.runner.enqueue(input, caller);
      } catch {
        throw new ProblemError(
          503,
          'background asks are unavailable right now (the job store failed); try again',
          {
            headers: { 'retry-after': '5' },
          },
        );
      }
      c.set('trailDetail', { action: 'ask', async: true, job_id: jobId });
      return c.json({ job_id: jobId, status: 'queued' as const }, 202, { location: `/api/jobs/${jobId}` });
    }
    const answer = await ai.service.ask(input, caller);
    c.set('trailDetail', { action: 'ask', async: false, llm_used: answer.llm_used });
    return c.json(answer);
  });
}

export function jobRoutes(ai: AiFeatures, app: Hono<AuditEnv>): void {
  app.get('/:job_id', async (c) => {
    const id = c.req.param('job_id');
    const notFound = new ProblemError(404, 'no such job (unknown, expired, or not yours)');
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) throw notFound;
    let job: Awaited<ReturnType<CacheBackend['jobs']['get']>>;
    try {
      job = await ai.backend.jobs.get(id);
    } catch {
      throw new ProblemError(503, 'the job store is unavailable; try again', {
        headers: { 'retry-after': '5' },
      });
    }
    if (!job || job.owner !== ownerOf(callerOf(c))) throw notFound;
    return c.json({
      job_id: job.id,
      status: job.status,
      created_at: iso(job.createdAt),
      updated_at: iso(job.updatedAt),
      expires_at: iso(job.expiresAt),
      ...(job.status === 'succeeded' && job.result ? { result: JSON.parse(job.result) } : {}),
      ...(job.status === 'failed' && job.error ? { error: job.error } : {}),
    });
  });
}

export function explainRoutes(ai: AiFeatures, app: Hono<AuditEnv>): void {
  app.post('/:id/explain', async (c) => {
    const seq = parseEventId(c.req.param('id'));
    if (seq === undefined) throw fieldProblem('id', 'is not an event id');
    const answer = await ai.service.explain(seq, callerOf(c));
    c.set('trailDetail', { action: 'explain', event: String(seq), llm_used: answer.llm_used });
    return c.json(answer);
  });
}
