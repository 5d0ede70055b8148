/**
 * The audit plugin's OpenAPI document (spec audit-event-search-service.md): every route it mounts
 * (routes.ts), and the hub's `/api/version` that the spec counts as the service's. Each routes
 * file declares its operations beside its handlers (eventsOperations, alertOperations, …); this
 * assembles them with the tags, the named schemas and the refusals every signed-in route shares.
 */
import { HEADERS, type OpenApiDocument, openApiDocument, problem } from '../../../src/http/openapi.js';
import { versionSchema } from '../../../src/http/schemas.js';
import { alertOperations } from '../alerts/routes.js';
import { aiOperations } from '../ask/routes.js';
import { savedSearchOperations } from '../saved/routes.js';
import { timelineOperations } from '../timeline/routes.js';
import { adminOperations } from './admin-routes.js';
import { eventsOperations } from './events-routes.js';
import { exportOperations } from './export.js';
import { commentSchema, eventSchema } from './schemas.js';
import { trailOperations } from './trail-routes.js';
import { webhookOperations } from './webhook-routes.js';

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
export function auditOpenApiDocument(version: string, features: { ai?: boolean } = {}): OpenApiDocument {
  const events = eventsOperations(signedIn);
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
      {
        name: 'saved searches',
        description:
          'Named filters, private or shared with an audit role; run from here, opened in the console, used as alert conditions.',
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
      // The export is listed right after the search, as it always was.
      ...events.slice(0, 1),
      ...exportOperations(signedIn),
      ...events.slice(1),
      ...timelineOperations(signedIn),
      ...adminOperations(signedIn),
      ...webhookOperations(signedIn),
      {
        method: 'get',
        path: '/api/version',
        operationId: 'getVersion',
        tag: 'operations',
        summary: 'The version (the VERSION file)',
        responses: { 200: { description: 'The version.', body: versionSchema } },
      },
      ...alertOperations(signedIn),
      ...savedSearchOperations(signedIn),
      ...trailOperations(signedIn),
      ...(features.ai ? aiOperations(signedIn) : []),
    ],
  });
}
