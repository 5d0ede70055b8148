/**
 * The billing plugin (`PLUGINS=billing`, issue 11): subscribers buy messaging with invoices paid
 * in bitcoin through the operator's own BTCPay Server (Greenfield API v1). Plans, paid
 * subscriptions, invoices and every state change live in the hub's SQLite file
 * (src/billing/sqlite-schema.ts); a
 * settled invoice grants messaging through the same subscription rows the CLI grants
 * (src/messaging/subscription-repository.ts, source `billing`). README "Billing". The service
 * itself is core (src/billing); this module wires it into the hub over SQLite. The same service
 * runs on the upstream over PostgreSQL (sync/upstream/billing, docs/sync.md).
 */

import { BillingService } from '../../src/billing/billing-service.js';
import type { BillingChange } from '../../src/billing/events.js';
import { GreenfieldClient } from '../../src/billing/greenfield-client.js';
import { billingOpenApiDocument } from '../../src/billing/http/openapi.js';
import { billingRoutes } from '../../src/billing/http/routes.js';
import { BillingMetrics } from '../../src/billing/metrics.js';
import { BILLING_TOPIC_ROOT, billingEventPayload, billingEventTopic } from '../../src/billing/mqtt-events.js';
import { PeriodExpiry } from '../../src/billing/period-expiry.js';
import { billingConfigFrom, billingSettings } from '../../src/billing/settings.js';
import { BILLING_COMPONENT, BILLING_MIGRATIONS } from '../../src/billing/sqlite-schema.js';
import { SqliteBillingStorage } from '../../src/billing/sqlite-storage.js';
import { openApiRoutes } from '../../src/http/api-docs.js';
import { defineModule } from '../../src/module.js';
import { migrateComponent } from '../../src/store/component-migrations.js';

export const billingModule = defineModule({
  name: 'billing',
  settings: billingSettings,
  async create(ctx) {
    const config = billingConfigFrom(ctx.settings);
    migrateComponent(ctx.db, BILLING_COMPONENT, BILLING_MIGRATIONS);
    const storage = new SqliteBillingStorage(ctx.db);
    const metrics = new BillingMetrics(ctx.metrics, () => storage.store.countPaid());
    const onChange = (change: BillingChange) => ctx.bus.emit('billing.changed', change);
    // Issue 11: every paid subscription's state change on `meshhub/billing/<subscriber>`, admins only.
    ctx.mqtt.topic(`${BILLING_TOPIC_ROOT}/#`, { readers: 'admin' });
    ctx.bus.on(ctx.owner, 'billing.changed', (change) =>
      ctx.mqtt.publish(billingEventTopic(change), billingEventPayload(change)),
    );
    const service = new BillingService({
      storage,
      client: new GreenfieldClient(config),
      config,
      log: ctx.log,
      metrics,
      onChange,
    });
    ctx.log.info({ btcpay: config.baseUrl.origin, store: config.storeId }, 'billing plugin starting');
    const expiry = new PeriodExpiry({ storage, onChange, graceMs: config.graceMs });
    // Periods that ended while the hub was down move along now, not at the next tick.
    await expiry.expireDue();
    ctx.schedule('expiry', config.expiryCron, async () => {
      await expiry.expireDue();
      await expiry.forgetOldDeliveries();
    });
    ctx.schedule('poll', config.pollCron, async () => {
      await service.pollOpen();
    });
    const routes = billingRoutes({ auth: ctx.auth, service, config, metrics });
    // The billing API's description at /api/v1/billing/openapi.json (and /docs with API_DOCS).
    routes.route('/', openApiRoutes(billingOpenApiDocument(ctx.hub.version), { docs: ctx.hub.apiDocs }));
    ctx.mount('/api/v1/billing', routes, { component: 'billing' });
    return { actors: [] };
  },
});
