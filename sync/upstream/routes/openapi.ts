/**
 * The upstream's OpenAPI document, served at /api/v1/openapi.json: every route the upstream
 * serves under /api, /.well-known, /health and /metrics (docs/architecture.md "The two
 * applications"). Each route group declares its operations beside its handlers
 * (src/http/openapi-route.ts), as the hub's do (hub/openapi.ts); this only assembles the groups
 * main.ts mounts, with the tags and the named schemas. The routes the upstream shares with the
 * hub (tokens, JWKS, the map, messaging, billing) bring the hub's declarations; messaging's
 * stream is not served upstream (404), so it is left out. That every served route is declared
 * is checked against a running upstream (tests/sync/upstream/openapi.test.ts).
 */

import { jwksOperations, tokenOperations } from '../../../src/auth/routes.js';
import { BILLING_COMPONENTS, BILLING_TAGS } from '../../../src/billing/http/openapi.js';
import { billingOperations } from '../../../src/billing/http/routes.js';
import { type OpenApiDocument, openApiDocument } from '../../../src/http/openapi.js';
import { messagingOperations } from '../../../src/messaging/routes.js';
import {
  conversationSummarySchema,
  messageDetailSchema,
  messageRecordSchema,
} from '../../../src/messaging/schemas.js';
import { mapOperations } from '../../../src/ui-server/map-routes.js';
import { tileJsonSchema } from '../../../src/ui-server/schemas.js';
import { upstreamOperationalOperations } from './health-routes.js';
import { upstreamLiveOperations } from './live-routes.js';
import { upstreamNodeSchema, upstreamNodesOperations } from './nodes-routes.js';
import { siteSchema, sitesOperations } from './sites-routes.js';
import { syncOperations } from './sync-routes.js';
import { upstreamReadingSchema, upstreamWeatherOperations } from './weather-routes.js';

/** Messaging's routes the upstream registers but does not serve (they answer 404: no stream upstream). */
export const UNSERVED_MESSAGING_PATHS: readonly string[] = [
  '/api/v1/messages/stream',
  '/api/v1/messages/stream/tickets',
];

/** The upstream's tags (billing's come with billing). */
const UPSTREAM_TAGS: Record<string, string> = {
  sync: 'The sites’ side: batches in, the online probe (site request tokens, docs/sync.md).',
  sites: 'The registered sites and how their sync stands.',
  weather: 'Environmental readings, per site.',
  nodes: 'The mesh nodes the sites have heard of.',
  auth: 'The upstream’s own token issuer.',
  messaging: 'Texts to and from mesh nodes, through the site that hears them.',
  map: 'What the web map draws under the nodes.',
  operations: 'Health, version, metrics and the live dashboard stream.',
};

export function upstreamOpenApiDocument(version: string, options: { billing: boolean }): OpenApiDocument {
  return openApiDocument({
    title: 'meshhub upstream API',
    version,
    description:
      'The upstream of many meshhub sites: the sites’ sync endpoints, the read API over what they sent (each Reading and node with its `site_id`), messaging for internet subscribers' +
      `${options.billing ? ', billing' : ''} and the token issuer. Reads need a bearer token unless UPSTREAM_PUBLIC_READ. Errors are RFC 9457 problem details.`,
    tags: [
      ...Object.entries(UPSTREAM_TAGS).map(([name, description]) => ({ name, description })),
      ...(options.billing ? BILLING_TAGS : []),
    ],
    components: {
      Reading: upstreamReadingSchema,
      Node: upstreamNodeSchema,
      Site: siteSchema,
      MessageRecord: messageRecordSchema,
      MessageDetail: messageDetailSchema,
      ConversationSummary: conversationSummarySchema,
      TileJson: tileJsonSchema,
      ...(options.billing ? BILLING_COMPONENTS : {}),
    },
    operations: [
      ...syncOperations,
      ...sitesOperations,
      ...upstreamWeatherOperations,
      ...upstreamNodesOperations,
      ...tokenOperations,
      ...jwksOperations,
      ...messagingOperations.filter((op) => !UNSERVED_MESSAGING_PATHS.includes(op.path)),
      ...mapOperations,
      ...(options.billing ? billingOperations : []),
      ...upstreamLiveOperations,
      ...upstreamOperationalOperations,
    ],
  });
}
