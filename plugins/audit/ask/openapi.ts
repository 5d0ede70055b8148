/**
 * The AI routes in the audit plugin's OpenAPI document (listed only when AI_FEATURES_ENABLED,
 * as the routes themselves are).
 */
import {
  COMMON_PROBLEMS,
  HEADERS,
  type OperationSpec,
  problem,
  type ResponseSpec,
} from '../../../src/http/openapi.js';
import { eventIdPathSchema } from '../http/schemas.js';
import {
  askAcceptedSchema,
  askAnswerSchema,
  askBodySchema,
  explainAnswerSchema,
  jobIdPathSchema,
  jobSchema,
} from './schemas.js';

const { badInput, tooLarge, notJson } = COMMON_PROBLEMS;

export function aiOperations(signedIn: Record<number, ResponseSpec>): OperationSpec[] {
  const limited = problem('The `ask` rate-limit tier (or another) is exceeded.', {
    'Retry-After': HEADERS.retryAfter,
  });
  return [
    {
      method: 'post',
      path: '/api/ask',
      operationId: 'ask',
      tag: 'ask',
      summary: 'A plain-language question about the events, answered by the LLM or as a list',
      description:
        'The question is parsed without an LLM (time range, people, devices, addresses, operations, intent → services); explicit filters win. Up to 1000 matches are fetched and a sample of at most LLM_MAX_EVENTS goes to the model. Without a working model the answer is a bullet list (`llm_used: false`, `fallback_reason`). With `"async": true`: 202 and a job id.',
      security: 'optional-bearer',
      body: { schema: askBodySchema },
      responses: {
        200: { description: 'The answer.', body: askAnswerSchema },
        202: {
          description: 'Queued (async); poll the Location.',
          body: askAcceptedSchema,
          headers: { Location: { description: '/api/jobs/{job_id}' } },
        },
        400: badInput,
        ...signedIn,
        413: tooLarge,
        415: notJson,
        429: limited,
        503: problem('Sign-in is misconfigured, or the job store is unavailable (async).', {
          'Retry-After': HEADERS.retryAfter,
        }),
      },
    },
    {
      method: 'get',
      path: '/api/jobs/{job_id}',
      operationId: 'getJob',
      tag: 'ask',
      summary: 'Status and result of a background ask (only for the caller who created it)',
      security: 'optional-bearer',
      params: { path: jobIdPathSchema },
      responses: {
        200: { description: 'The job.', body: jobSchema },
        ...signedIn,
        404: problem('Unknown, expired (24 h), or created by someone else.'),
        503: problem('Sign-in is misconfigured, or the job store is unavailable.'),
      },
    },
    {
      method: 'post',
      path: '/api/events/{id}/explain',
      operationId: 'explainEvent',
      tag: 'ask',
      summary: 'An explanation of one event: what happened, who, whether unusual, what to check',
      security: 'optional-bearer',
      params: { path: eventIdPathSchema },
      responses: {
        200: { description: 'The explanation.', body: explainAnswerSchema },
        400: badInput,
        ...signedIn,
        403: problem(
          'The event is privacy-gated and the caller’s roles do not allow it, or the caller has no reader role (`access`: `read`).',
        ),
        404: problem('No event with this id.'),
        429: limited,
      },
    },
  ];
}
