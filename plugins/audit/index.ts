/**
 * The audit plugin (`PLUGINS=audit`): collects audit events from Microsoft Graph and the Office 365
 * Management Activity API, keeps them in the hub's SQLite file, and serves search, tagging,
 * comments and export (spec: audit-event-search-service.md; issue 6). Asks, explanations,
 * alerts, SIEM forwarding and MCP come later: they plug into `AuditStore.onStored`, the
 * `PrivacyPolicy` and the `ask` rate-limit tier that are already here.
 */

import { openApiRoutes } from '../../src/http/api-docs.js';
import type { Logger } from '../../src/log.js';
import { defineModule } from '../../src/module.js';
import { AuditCollectorActor } from './collector-actor.js';
import { type AuditConfig, auditConfigFrom, auditSettings } from './config.js';
import { auditOpenApiDocument } from './http/openapi.js';
import { PrivacyPolicy } from './http/privacy.js';
import { auditRouteGroups } from './http/routes.js';
import { AuditMaintenanceActor } from './maintenance-actor.js';
import { AuditMetrics } from './metrics.js';
import { AuditStore } from './store/audit-store.js';

function warnAboutSettings(log: Logger, config: AuditConfig): void {
  if (config.auth.state === 'misconfigured') {
    log.warn(
      { missing: config.auth.missing },
      'AUTH_ENABLED is true but authentication is misconfigured: every audit route that needs a token answers 503',
    );
  }
  if (config.corsOrigins.includes('*')) {
    log.warn(
      { auth_enabled: config.auth.enabled },
      'CORS_ORIGINS contains "*": any web page may call the audit API from a browser',
    );
  }
  if (config.cacheUrl) {
    log.warn({}, 'CACHE_URL is ignored: rate limits are kept in memory on this hub');
  }
  const later = (
    [
      ['AI_FEATURES_ENABLED', config.features.aiFeaturesEnabled],
      ['ALERTS_ENABLED', config.features.alertsEnabled],
      ['SIEM_ENABLED', config.features.siemEnabled],
    ] as const
  ).filter(([, on]) => on);
  if (later.length) {
    log.warn(
      { settings: later.map(([k]) => k) },
      'these audit features are not available in this version yet',
    );
  }
}

export const auditModule = defineModule({
  name: 'audit',
  settings: auditSettings,
  create(ctx) {
    const provider = ctx.auth.provider;
    const config = auditConfigFrom(
      ctx.settings,
      provider ? { ...provider, rolesClaim: provider.rolesClaim } : undefined,
    );
    const { version } = ctx.hub;
    ctx.log.info(
      { auth_enabled: config.auth.enabled, version, sources: config.sources },
      'audit plugin starting',
    );
    warnAboutSettings(ctx.log, config);

    const store = new AuditStore(() => ctx.db);
    const metrics = new AuditMetrics(ctx.metrics, () => store.repos().sources.all());
    const collector = new AuditCollectorActor({ config, store, metrics, log: ctx.log });
    const maintenance = new AuditMaintenanceActor({ config, store, log: ctx.log });
    ctx.schedule('fetch', config.fetchCron, () => collector.requestFetch('schedule'));
    ctx.schedule('maintenance', config.maintenanceCron, () => maintenance.runOnce());
    const groups = auditRouteGroups({
      config,
      store,
      collector,
      privacy: new PrivacyPolicy(config.privacy),
      metrics,
      verifier: config.auth.state === 'on' ? ctx.auth.verifier : undefined,
      log: ctx.log,
      version,
    });
    for (const { path, app } of groups) ctx.mount(path, app);
    // The audit API's description, built from the schemas its routes validate with.
    ctx.mount('/api', openApiRoutes(auditOpenApiDocument(version), { docs: ctx.hub.apiDocs }));
    return { actors: [collector, maintenance] };
  },
});
