/**
 * The mesh API's OpenAPI document (spec mesh-environment-and-messaging-api.md: "a draft,
 * OpenAPI 3.0.3"): every route the hub serves under /api/v1, /.well-known, /health,
 * /api/version and /metrics, from the schemas in each area's schemas.ts.
 */
import {
  jwksSchema,
  refreshRequestSchema,
  tokenRequestSchema,
  tokenResponseSchema,
} from '../src/auth/schemas.js';
import {
  COMMON_PROBLEMS,
  HEADERS,
  type OpenApiDocument,
  openApiDocument,
  problem,
} from '../src/http/openapi.js';
import { healthReportSchema, radioStatusSchema, versionSchema } from '../src/http/schemas.js';
import { ingestBodySchema, ingestRejectedSchema, ingestResultSchema } from '../src/ingest/schemas.js';
import { helloEventSchema, LIVE_EVENTS_DESCRIPTION } from '../src/live/schemas.js';
import {
  conversationListSchema,
  conversationSummarySchema,
  idempotencyHeaderSchema,
  messageDetailListSchema,
  messageDetailSchema,
  messageIdPathSchema,
  messageRecordListSchema,
  messageRecordSchema,
  nicknameBodySchema,
  nodeIdPathSchema,
  outboundMessageSchema,
  pageQuerySchema,
  streamQuerySchema,
  streamTicketSchema,
} from '../src/messaging/schemas.js';
import { nodeListSchema, nodeSchema } from '../src/nodes/schemas.js';
import { tileJsonSchema, tilePathSchema } from '../src/ui-server/schemas.js';
import {
  historyQuerySchema,
  latestQuerySchema,
  readingListSchema,
  readingSchema,
} from '../src/weather/schemas.js';

const { badInput, tooLarge, notJson } = COMMON_PROBLEMS;

const unauthorized = problem('No bearer token, or a refused one.', {
  'WWW-Authenticate': HEADERS.wwwAuthenticate,
});
const noRole = problem('The token does not carry a role this needs.');
const idpDown = problem('The identity provider’s keys cannot be fetched to check the token.', {
  'Retry-After': HEADERS.retryAfter,
});
const messagingAuth = { 401: unauthorized, 403: noRole, 503: idpDown };

export function meshOpenApiDocument(version: string): OpenApiDocument {
  return openApiDocument({
    title: 'meshhub mesh environment and messaging API',
    version,
    description:
      'Weather readings of mesh nodes, the nodes themselves, and text messages to and from them. ' +
      'Errors are RFC 9457 problem details. Lists page with `limit` and an opaque cursor announced in a `Link: <…>; rel="next"` header, so bodies stay `{ "data": [...] }`.',
    tags: [
      { name: 'weather', description: 'Environmental readings (spec "Reading").' },
      { name: 'nodes', description: 'The mesh nodes the hub has heard of.' },
      { name: 'ingest', description: 'Readings from sensors that speak HTTP.' },
      { name: 'auth', description: 'The hub’s own token issuer.' },
      { name: 'messaging', description: 'Texts to and from mesh nodes (bearer, role subscriber or admin).' },
      { name: 'map', description: 'What the web map draws under the nodes.' },
      { name: 'operations', description: 'Health, version, metrics and the live dashboard stream.' },
    ],
    components: {
      Reading: readingSchema,
      Node: nodeSchema,
      MessageRecord: messageRecordSchema,
      MessageDetail: messageDetailSchema,
      ConversationSummary: conversationSummarySchema,
      TileJson: tileJsonSchema,
      RadioStatus: radioStatusSchema,
      HealthReport: healthReportSchema,
      LiveHello: helloEventSchema,
    },
    operations: [
      {
        method: 'get',
        path: '/api/v1/weather/latest',
        operationId: 'getLatestReadings',
        tag: 'weather',
        summary: 'The newest value of every metric, one Reading per node, ordered by node_id',
        description: '`timestamp` is the newest reading’s. An unknown node is an empty list.',
        params: { query: latestQuerySchema },
        responses: { 200: { description: 'The readings.', body: readingListSchema }, 400: badInput },
      },
      {
        method: 'get',
        path: '/api/v1/weather/history',
        operationId: 'getReadingHistory',
        tag: 'weather',
        summary: 'A node’s readings in [start, end), ascending: raw, or hourly / daily means',
        params: { query: historyQuerySchema },
        responses: {
          200: {
            description: 'One page of readings.',
            body: readingListSchema,
            headers: { Link: HEADERS.link },
          },
          400: badInput,
        },
      },
      {
        method: 'get',
        path: '/api/v1/nodes',
        operationId: 'listNodes',
        tag: 'nodes',
        summary: 'Every node the hub has heard of, ordered by node_id',
        responses: { 200: { description: 'The nodes; unknown fields left out.', body: nodeListSchema } },
      },
      {
        method: 'post',
        path: '/api/v1/ingest/readings',
        operationId: 'ingestReadings',
        tag: 'ingest',
        summary: 'Store readings from a sensor (role ingest or admin)',
        description:
          'The same validation as the MQTT topic `meshhub/ingest/readings`. Answered once the accepted readings are committed; readings are idempotent on node and timestamp, so a batch may be resent as it is.',
        security: 'bearer',
        body: { schema: ingestBodySchema },
        responses: {
          202: {
            description: 'Committed; rejected readings are listed in `errors`.',
            body: ingestResultSchema,
          },
          400: problem('Malformed JSON, or an empty batch.'),
          401: unauthorized,
          403: noRole,
          413: problem('More than 10000 readings, or a body over 8 MiB.'),
          415: notJson,
          422: {
            description: 'Every reading was rejected; nothing was stored.',
            body: ingestRejectedSchema,
            contentType: 'application/problem+json',
          },
          503: problem('The store cannot commit: send the readings again later.', {
            'Retry-After': HEADERS.retryAfter,
          }),
        },
      },
      {
        method: 'post',
        path: '/api/v1/auth/token',
        operationId: 'issueToken',
        tag: 'auth',
        summary: 'A bearer token for a user of this hub (password grant)',
        body: {
          schema: tokenRequestSchema,
          contentTypes: ['application/json', 'application/x-www-form-urlencoded'],
        },
        responses: {
          200: { description: 'The token.', body: tokenResponseSchema },
          400: badInput,
          401: problem('Wrong username or password (it does not say which).', {
            'WWW-Authenticate': HEADERS.wwwAuthenticate,
          }),
          413: tooLarge,
          415: notJson,
          429: problem('Too many failed sign-ins from this address, or too many at once: wait Retry-After.', {
            'Retry-After': HEADERS.retryAfter,
          }),
        },
      },
      {
        method: 'post',
        path: '/api/v1/auth/refresh',
        operationId: 'refreshToken',
        tag: 'auth',
        summary: 'A new access token (and refresh token) for a refresh token',
        description:
          'Each refresh token works once: the answer carries the next one. It stops working when it expires (AUTH_REFRESH_TTL) or its user is removed, changes password or roles, or has their tokens revoked.',
        body: {
          schema: refreshRequestSchema,
          contentTypes: ['application/json', 'application/x-www-form-urlencoded'],
        },
        responses: {
          200: { description: 'The new tokens.', body: tokenResponseSchema },
          400: badInput,
          401: problem('The refresh token is unknown, used, expired or revoked: sign in again.', {
            'WWW-Authenticate': HEADERS.wwwAuthenticate,
          }),
          413: tooLarge,
          415: notJson,
        },
      },
      {
        method: 'get',
        path: '/.well-known/jwks.json',
        operationId: 'getJwks',
        tag: 'auth',
        summary: 'The public keys the hub signs its tokens with',
        responses: { 200: { description: 'A JWK Set (RFC 7517).', body: jwksSchema } },
      },
      {
        method: 'post',
        path: '/api/v1/messages',
        operationId: 'sendMessage',
        tag: 'messaging',
        summary: 'Send a text to a mesh node',
        description:
          'Checked in order: token, role, body, Idempotency-Key replay, the hub’s own node, unknown node, subscription, rate limits. A refused request stores nothing.',
        security: 'bearer',
        params: { header: idempotencyHeaderSchema },
        body: { schema: outboundMessageSchema },
        responses: {
          202: {
            description: 'Accepted and queued: the message record with `status: "queued"`.',
            body: messageRecordSchema,
            headers: {
              Location: { description: '`/api/v1/messages/{id}`: the message’s current state.' },
              'Idempotent-Replayed': { description: '`true` when this answers a retry with the same key.' },
            },
          },
          400: badInput,
          ...messagingAuth,
          403: problem('A role is missing, or the subscription does not allow messaging this node.'),
          404: problem('No node with this id is known to the hub.'),
          413: tooLarge,
          415: notJson,
          422: problem('This Idempotency-Key was used with another body.'),
          429: problem('Rate limit exceeded, per subscriber or per node.', {
            'Retry-After': HEADERS.retryAfter,
          }),
        },
      },
      {
        method: 'get',
        path: '/api/v1/messages/conversations',
        operationId: 'listConversations',
        tag: 'messaging',
        summary: 'One summary per node the caller has talked with, newest first',
        security: 'bearer',
        params: { query: pageQuerySchema },
        responses: {
          200: { description: 'One page.', body: conversationListSchema, headers: { Link: HEADERS.link } },
          400: badInput,
          ...messagingAuth,
        },
      },
      {
        method: 'get',
        path: '/api/v1/messages/conversations/{node_id}',
        operationId: 'getConversation',
        tag: 'messaging',
        summary: 'The conversation with a node, oldest first; marks its texts to the caller read',
        security: 'bearer',
        params: { path: nodeIdPathSchema, query: pageQuerySchema },
        responses: {
          200: { description: 'One page.', body: messageRecordListSchema, headers: { Link: HEADERS.link } },
          400: badInput,
          ...messagingAuth,
        },
      },
      {
        method: 'patch',
        path: '/api/v1/messages/conversations/{node_id}',
        operationId: 'setConversationNickname',
        tag: 'messaging',
        summary: 'The caller’s own name for a node',
        security: 'bearer',
        params: { path: nodeIdPathSchema },
        body: { schema: nicknameBodySchema },
        responses: {
          200: { description: 'The conversation summary afterwards.', body: conversationSummarySchema },
          400: badInput,
          ...messagingAuth,
          404: problem('The caller has no conversation with this node.'),
          413: tooLarge,
          415: notJson,
        },
      },
      {
        method: 'post',
        path: '/api/v1/messages/stream/tickets',
        operationId: 'issueStreamTicket',
        tag: 'messaging',
        summary: 'A single-use ticket to open the stream without a token in the URL (EventSource)',
        security: 'bearer',
        responses: {
          201: { description: 'Valid for 30 s, once.', body: streamTicketSchema },
          ...messagingAuth,
        },
      },
      {
        method: 'get',
        path: '/api/v1/messages/stream',
        operationId: 'streamMessages',
        tag: 'messaging',
        summary: 'The caller’s messages as they change (Server-Sent Events)',
        description:
          '`event: message`: a MessageDetail without `history`; `event: conversation`: that conversation’s summary afterwards; `: ping` comments every 15 s. Authenticate with a bearer token or `?ticket=`.',
        security: 'optional-bearer',
        params: { query: streamQuerySchema },
        responses: {
          200: { description: 'The event stream.', contentType: 'text/event-stream' },
          401: unauthorized,
          403: noRole,
          429: problem('Too many streams open for this user.', { 'Retry-After': HEADERS.retryAfter }),
          503: problem('Too many streams open, or the identity provider cannot be reached.', {
            'Retry-After': HEADERS.retryAfter,
          }),
        },
      },
      {
        method: 'get',
        path: '/api/v1/messages/unmatched',
        operationId: 'listUnmatchedMessages',
        tag: 'messaging',
        summary: 'Admins: inbound texts nobody could be matched with, newest first',
        security: 'bearer',
        params: { query: pageQuerySchema },
        responses: {
          200: { description: 'One page.', body: messageDetailListSchema, headers: { Link: HEADERS.link } },
          400: badInput,
          ...messagingAuth,
        },
      },
      {
        method: 'get',
        path: '/api/v1/messages/{id}',
        operationId: 'getMessage',
        tag: 'messaging',
        summary: 'One of the caller’s messages with its delivery history',
        security: 'bearer',
        params: { path: messageIdPathSchema },
        responses: {
          200: { description: 'The message.', body: messageDetailSchema },
          400: badInput,
          ...messagingAuth,
          404: problem('No such message of the caller’s.'),
        },
      },
      {
        method: 'get',
        path: '/api/v1/map/tilejson',
        operationId: 'getTileJson',
        tag: 'map',
        summary: 'The tile source of the web map (TileJSON 3.0.0)',
        responses: { 200: { description: 'The tile source.', body: tileJsonSchema } },
      },
      {
        method: 'get',
        path: '/api/v1/map/tiles/{z}/{x}/{y}',
        operationId: 'getTile',
        tag: 'map',
        summary: 'A tile of the hub’s local map file (MAP_TILES); a transparent PNG where it has none',
        params: { path: tilePathSchema },
        responses: {
          200: { description: 'The tile.', contentType: ['image/png', 'image/jpeg', 'image/webp'] },
          400: badInput,
          404: problem('The hub serves no tiles: MAP_TILES is an online URL.'),
        },
      },
      {
        method: 'get',
        path: '/api/v1/live',
        operationId: 'streamLive',
        tag: 'operations',
        summary: 'Live updates for the dashboard (Server-Sent Events; no sign-in)',
        description: `${LIVE_EVENTS_DESCRIPTION}\nThe \`hello\` data is a LiveHello (components).`,
        responses: {
          200: { description: 'The event stream.', contentType: 'text/event-stream' },
          503: problem('Too many dashboards are open.', { 'Retry-After': HEADERS.retryAfter }),
        },
      },
      {
        method: 'get',
        path: '/health',
        operationId: 'getHealth',
        tag: 'operations',
        summary: 'Every actor’s state and the radio link',
        responses: {
          200: { description: 'ok or degraded.', body: healthReportSchema },
          503: { description: 'down: a required actor is not running.', body: healthReportSchema },
        },
      },
      {
        method: 'get',
        path: '/api/version',
        operationId: 'getVersion',
        tag: 'operations',
        summary: 'The hub’s version (the VERSION file)',
        responses: { 200: { description: 'The version.', body: versionSchema } },
      },
      {
        method: 'get',
        path: '/metrics',
        operationId: 'getMetrics',
        tag: 'operations',
        summary: 'Prometheus metrics',
        responses: { 200: { description: 'Prometheus text exposition format.', contentType: 'text/plain' } },
      },
    ],
  });
}
