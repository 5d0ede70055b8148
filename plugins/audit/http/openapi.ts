/**
 * The audit plugin's OpenAPI document (spec audit-event-search-service.md): every route it mounts
 * (routes.ts), and the hub's `/api/version` that the spec counts as the service's, from the
 * schemas the routes validate with (schemas.ts, filters.ts).
 */
import { z } from 'zod';
import {
  COMMON_PROBLEMS,
  HEADERS,
  type OpenApiDocument,
  openApiDocument,
  problem,
} from '../../../src/http/openapi.js';
import { versionSchema } from '../../../src/http/schemas.js';
import { alertOperations } from '../alerts/openapi.js';
import { aiOperations } from '../ask/openapi.js';
import { exportQuerySchema, searchQuerySchema } from './filters.js';
import {
  authConfigSchema,
  bulkTagsBodySchema,
  bulkTagsResultSchema,
  commentBodySchema,
  commentSchema,
  eventDetailSchema,
  eventIdPathSchema,
  eventPageSchema,
  eventSchema,
  featuresSchema,
  fetchAcceptedSchema,
  fetchBodySchema,
  filterOptionsSchema,
  notificationsBodySchema,
  sourceHealthSchema,
  tagsBodySchema,
  webhookQuerySchema,
} from './schemas.js';
import { trailOperations } from './trail-routes.js';

const { badInput, tooLarge, notJson } = COMMON_PROBLEMS;

const limited = problem('A rate-limit tier (fetch, write, default) is exceeded; `tier` names it.', {
  'Retry-After': HEADERS.retryAfter,
});
/** The answers of every route behind the bearer check (AUTH_ENABLED) and the role check. */
const signedIn = {
  401: problem('AUTH_ENABLED and no valid bearer token.', { 'WWW-Authenticate': HEADERS.wwwAuthenticate }),
  403: problem(
    'The caller’s roles do not allow this: reading needs a role in AUDIT_READER_ROLES (default `admin`, `auditor`) or AUDIT_ADMIN_ROLES. `access` (`read`) and `roles` say what would.',
  ),
  429: limited,
  503: problem('Sign-in is misconfigured, or the identity provider’s keys cannot be fetched.'),
};
const restricted = problem(
  'The event is privacy-gated and the caller’s roles do not allow it, or the caller has no reader role (`access`: `read`).',
);
/** A change: an admin role (AUDIT_ADMIN_ROLES), and the event visible to the caller. */
const changeRefused = problem(
  'The caller has no admin role (AUDIT_ADMIN_ROLES, default `admin`; `access`: `admin`), no reader role, or the event is privacy-gated.',
);
const adminOnly = problem(
  'This needs an administrator role (AUDIT_ADMIN_ROLES, default `admin`); `access` (`admin`) and `roles` say which.',
);
const noEvent = problem('No event with this id.');

export function auditOpenApiDocument(version: string, features: { ai?: boolean } = {}): OpenApiDocument {
  return openApiDocument({
    title: 'meshhub audit event search API',
    version,
    description:
      'Audit events collected from Microsoft 365: search with cursor paging, tags, comments, export, source health. ' +
      'With AUTH_ENABLED every route but /api/config/* and the webhook needs a bearer token from the identity provider, ' +
      'with a role in AUDIT_READER_ROLES to read and in AUDIT_ADMIN_ROLES to change anything. ' +
      'Errors are RFC 9457 problem details; mutations are recorded in an internal audit trail.',
    tags: [
      { name: 'events', description: 'Search, one event, tags, comments, export.' },
      { name: 'operations', description: 'Filter options, source health, fetching, frontend configuration.' },
      { name: 'webhooks', description: 'Microsoft Graph change notifications.' },
      {
        name: 'alerts',
        description:
          'Alert rules (read by readers, written by administrators) and the alerts they fired (administrators).',
      },
      ...(features.ai
        ? [
            {
              name: 'ask',
              description: 'Plain-language questions, explanations, background jobs (AI_FEATURES_ENABLED).',
            },
          ]
        : []),
    ],
    components: { Event: eventSchema, Comment: commentSchema },
    operations: [
      {
        method: 'get',
        path: '/api/events',
        operationId: 'searchEvents',
        tag: 'events',
        summary: 'Search events, newest first, with cursor paging both ways',
        description:
          '`services`, `include_tags` and `exclude_tags` may repeat or be comma-separated; `actor`, `operation` and `result` are case-insensitive literal substrings. Privacy-gated events are left out for callers without the role.',
        security: 'optional-bearer',
        params: { query: searchQuerySchema },
        responses: { 200: { description: 'One page.', body: eventPageSchema }, 400: badInput, ...signedIn },
      },
      {
        method: 'get',
        path: '/api/events/export',
        operationId: 'exportEvents',
        tag: 'events',
        summary: 'Every event matching the filters, as CSV or JSON (streamed)',
        security: 'optional-bearer',
        params: { query: exportQuerySchema },
        responses: {
          200: {
            description: 'An attachment.',
            headers: {
              'Content-Disposition': { description: '`attachment; filename="audit-events-….csv"`' },
            },
            content: { 'text/csv': undefined, 'application/json': z.array(eventSchema) },
          },
          400: badInput,
          ...signedIn,
          429: problem('Too many exports are running, or a rate limit is exceeded.', {
            'Retry-After': HEADERS.retryAfter,
          }),
        },
      },
      {
        method: 'post',
        path: '/api/events/bulk-tags',
        operationId: 'bulkTagEvents',
        tag: 'events',
        summary: 'Tag every event matching the filters (append or replace), at most 10,000',
        security: 'optional-bearer',
        body: { schema: bulkTagsBodySchema },
        responses: {
          200: { description: 'What changed.', body: bulkTagsResultSchema },
          400: badInput,
          ...signedIn,
          403: changeRefused,
          413: tooLarge,
          415: notJson,
          422: problem('No event matches, or an event would carry too many tags; nothing was tagged.'),
        },
      },
      {
        method: 'get',
        path: '/api/events/{id}',
        operationId: 'getEvent',
        tag: 'events',
        summary: 'One event, with its comments and the record as the source sent it',
        security: 'optional-bearer',
        params: { path: eventIdPathSchema },
        responses: {
          200: { description: 'The event.', body: eventDetailSchema },
          400: badInput,
          ...signedIn,
          403: restricted,
          404: noEvent,
        },
      },
      {
        method: 'patch',
        path: '/api/events/{id}/tags',
        operationId: 'setEventTags',
        tag: 'events',
        summary: 'Set the tags of one event',
        security: 'optional-bearer',
        params: { path: eventIdPathSchema },
        body: { schema: tagsBodySchema },
        responses: {
          200: { description: 'The event afterwards.', body: eventSchema },
          400: badInput,
          ...signedIn,
          403: changeRefused,
          404: noEvent,
          413: tooLarge,
          415: notJson,
        },
      },
      {
        method: 'post',
        path: '/api/events/{id}/comments',
        operationId: 'addEventComment',
        tag: 'events',
        summary: 'Add a comment to one event',
        security: 'optional-bearer',
        params: { path: eventIdPathSchema },
        body: { schema: commentBodySchema },
        responses: {
          201: {
            description: 'The comment.',
            body: commentSchema,
            headers: { Location: { description: 'The event: `/api/events/{id}`.' } },
          },
          400: badInput,
          ...signedIn,
          403: changeRefused,
          404: noEvent,
          413: tooLarge,
          415: notJson,
        },
      },
      {
        method: 'get',
        path: '/api/filter-options',
        operationId: 'getFilterOptions',
        tag: 'operations',
        summary: 'Dropdown values for the filters (privacy-gated ones left out)',
        security: 'optional-bearer',
        responses: { 200: { description: 'The values.', body: filterOptionsSchema }, ...signedIn },
      },
      {
        method: 'get',
        path: '/api/source-health',
        operationId: 'getSourceHealth',
        tag: 'operations',
        summary: 'Per source: the last attempt and success, errors, watermark and counts',
        security: 'optional-bearer',
        responses: { 200: { description: 'Every collected source.', body: sourceHealthSchema }, ...signedIn },
      },
      {
        method: 'post',
        path: '/api/fetch',
        operationId: 'requestFetch',
        tag: 'operations',
        summary: 'Fetch now (administrators; rate-limit tier fetch)',
        security: 'optional-bearer',
        body: { schema: fetchBodySchema, required: false },
        responses: {
          202: {
            description: 'Queued.',
            body: fetchAcceptedSchema,
            headers: { Location: { description: '`/api/source-health`: where to watch it.' } },
          },
          400: badInput,
          ...signedIn,
          403: adminOnly,
          409: problem('Collection is not configured.'),
          415: notJson,
          503: problem('The collector is busy, sign-in is misconfigured, or the identity provider is down.', {
            'Retry-After': HEADERS.retryAfter,
          }),
        },
      },
      {
        method: 'get',
        path: '/api/config/features',
        operationId: 'getFeatures',
        tag: 'operations',
        summary: 'Feature flags for the frontend (no sign-in, no rate limit)',
        responses: { 200: { description: 'The flags.', body: featuresSchema } },
      },
      {
        method: 'get',
        path: '/api/config/auth',
        operationId: 'getAuthConfig',
        tag: 'operations',
        summary: 'Sign-in settings for the frontend (no sign-in, no rate limit)',
        responses: { 200: { description: 'The settings.', body: authConfigSchema } },
      },
      {
        method: 'post',
        path: '/api/webhooks/directory',
        operationId: 'receiveDirectoryNotifications',
        tag: 'webhooks',
        summary: 'Microsoft Graph change notifications, checked against WEBHOOK_CLIENT_SECRET',
        description:
          'With `?validationToken=` (subscription validation) the token is answered as text/plain; otherwise every notification must carry this hub’s `clientState`, and the directory is fetched early.',
        params: { query: webhookQuerySchema },
        body: { schema: notificationsBodySchema, required: false },
        responses: {
          200: { description: 'The validation token.', contentType: 'text/plain' },
          202: { description: 'Accepted.' },
          400: badInput,
          403: problem('A notification does not carry this hub’s client state.'),
          404: problem('The webhook is not configured (WEBHOOK_CLIENT_SECRET).'),
          409: problem(
            'A valid notification, but collection is not configured or the directory is not collected.',
          ),
          413: tooLarge,
          415: notJson,
          429: limited,
        },
      },
      {
        method: 'get',
        path: '/api/version',
        operationId: 'getVersion',
        tag: 'operations',
        summary: 'The version (the VERSION file)',
        responses: { 200: { description: 'The version.', body: versionSchema } },
      },
      ...alertOperations(signedIn),
      ...trailOperations(signedIn),
      ...(features.ai ? aiOperations(signedIn) : []),
    ],
  });
}
