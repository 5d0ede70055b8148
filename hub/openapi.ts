/**
 * The mesh API's OpenAPI document (spec mesh-environment-and-messaging-api.md: "a draft,
 * OpenAPI 3.0.3"): every route the hub serves under /api/v1, /.well-known, /health,
 * /api/version and /metrics. Each route group declares its operations beside its handlers
 * (src/http/openapi-route.ts); this only assembles them, with the tags and the named schemas.
 */
import { jwksOperations, tokenOperations } from '../src/auth/routes.js';
import { deviceHealthOperations } from '../src/device-health/routes.js';
import { healthSampleSchema } from '../src/device-health/schemas.js';
import { operationalOperations } from '../src/http/app.js';
import { type OpenApiDocument, openApiDocument } from '../src/http/openapi.js';
import { healthReportSchema, radioStatusSchema } from '../src/http/schemas.js';
import { ingestOperations } from '../src/ingest/routes.js';
import { liveOperations } from '../src/live/live-routes.js';
import { helloEventSchema } from '../src/live/schemas.js';
import { mcpOperations } from '../src/mcp/http.js';
import { messagingOperations } from '../src/messaging/routes.js';
import {
  conversationSummarySchema,
  messageDetailSchema,
  messageRecordSchema,
} from '../src/messaging/schemas.js';
import { nodesOperations } from '../src/nodes/routes.js';
import { nodeSchema } from '../src/nodes/schemas.js';
import { notificationOperations } from '../src/notifications/routes.js';
import { firingSchema, ruleSchema } from '../src/notifications/schemas.js';
import { packetsOperations } from '../src/packets/routes.js';
import { linkOperations, tracerouteOperations, tracerouteRequestOperations } from '../src/topology/routes.js';
import { linkSchema, tracerouteSchema } from '../src/topology/schemas.js';
import { mapOperations } from '../src/ui-server/map-routes.js';
import { tileJsonSchema } from '../src/ui-server/schemas.js';
import { weatherOperations } from '../src/weather/routes.js';
import { readingSchema } from '../src/weather/schemas.js';

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
      {
        name: 'device health',
        description: 'Battery, voltage, channel use, uptime and link quality of mesh nodes.',
      },
      { name: 'ingest', description: 'Readings from sensors that speak HTTP.' },
      { name: 'auth', description: 'The hub’s own token issuer.' },
      { name: 'messaging', description: 'Texts to and from mesh nodes (bearer, role subscriber or admin).' },
      { name: 'topology', description: 'Traceroutes and the links between nodes.' },
      { name: 'map', description: 'What the web map draws under the nodes.' },
      {
        name: 'notifications',
        description: 'Notification rules, their firings and browsers’ Web Push subscriptions.',
      },
      { name: 'operations', description: 'Health, version, metrics and the live dashboard stream.' },
      { name: 'mcp', description: 'The MCP server over Streamable HTTP (bearer; MCP_HTTP_ENABLED).' },
    ],
    components: {
      Reading: readingSchema,
      Node: nodeSchema,
      DeviceHealthSample: healthSampleSchema,
      MessageRecord: messageRecordSchema,
      MessageDetail: messageDetailSchema,
      ConversationSummary: conversationSummarySchema,
      Traceroute: tracerouteSchema,
      Link: linkSchema,
      TileJson: tileJsonSchema,
      RadioStatus: radioStatusSchema,
      HealthReport: healthReportSchema,
      LiveHello: helloEventSchema,
      NotificationRule: ruleSchema,
      NotificationFiring: firingSchema,
    },
    operations: [
      ...weatherOperations,
      ...nodesOperations,
      ...packetsOperations,
      ...deviceHealthOperations,
      ...ingestOperations,
      ...tokenOperations,
      ...jwksOperations,
      ...messagingOperations,
      ...tracerouteRequestOperations,
      ...tracerouteOperations,
      ...linkOperations,
      ...mapOperations,
      ...liveOperations,
      ...notificationOperations,
      ...operationalOperations,
      ...mcpOperations,
    ],
  });
}
