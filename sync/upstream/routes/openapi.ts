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
import { billingOperations } from '../../../src/billing/http/routes.js';
import { adminPlanSchema, planSchema, subscriptionSchema } from '../../../src/billing/schemas.js';
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

export function upstreamOpenApiDocument(version: string, options: { billing: boolean }): OpenApiDocument {
  return openApiDocument({
    title: 'meshhub upstream API',
    version,
    description:
      'The upstream of many meshhub sites: the sites’ sync endpoints, the read API over what they sent (each Reading and node with its `site_id`), messaging for internet subscribers' +
      `${options.billing ? ', billing' : ''} and the token issuer. Reads need a bearer token unless UPSTREAM_PUBLIC_READ. Errors are RFC 9457 problem details.`,
    tags: [
      {
        name: 'sync',
        description: 'The sites’ side: batches in, the online probe (site request tokens, docs/sync.md).',
      },
      { name: 'sites', description: 'The registered sites and how their sync stands.' },
      { name: 'weather', description: 'Environmental readings, per site.' },
      { name: 'nodes', description: 'The mesh nodes the sites have heard of.' },
      { name: 'auth', description: 'The upstream’s own token issuer.' },
      { name: 'messaging', description: 'Texts to and from mesh nodes, through the site that hears them.' },
      { name: 'map', description: 'What the web map draws under the nodes.' },
      ...(options.billing
        ? [
            { name: 'plans', description: 'What can be bought.' },
            { name: 'subscriptions', description: 'Buying and renewing.' },
            { name: 'webhooks', description: 'BTCPay Server deliveries.' },
          ]
        : []),
      { name: 'operations', description: 'Health, version, metrics and the live dashboard stream.' },
    ],
    components: {
      Reading: upstreamReadingSchema,
      Node: upstreamNodeSchema,
      Site: siteSchema,
      MessageRecord: messageRecordSchema,
      MessageDetail: messageDetailSchema,
      ConversationSummary: conversationSummarySchema,
      TileJson: tileJsonSchema,
      ...(options.billing
        ? { Plan: planSchema, AdminPlan: adminPlanSchema, BillingSubscription: subscriptionSchema }
        : {}),
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
