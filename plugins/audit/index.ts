/**
 * The audit plugin (`PLUGINS=audit`): collects audit events from Microsoft Graph and the Office 365
 * Management Activity API, keeps them in the hub's SQLite file, and serves search, tagging,
 * comments and export (spec: audit-event-search-service.md; issue 6). Asks, explanations,
 * alerts, SIEM forwarding and MCP come later: they plug into `AuditStore.onStored`, the
 * `PrivacyPolicy` and the `ask` rate-limit tier that are already here.
 */
import type { Plugin, PluginContext } from '../../src/kernel/plugin.js';
import type { Database } from '../../src/store/database.js';
import { readVersion } from '../../src/version.js';
import { AuditCollectorActor } from './collector-actor.js';
import { loadAuditConfig } from './config.js';
import { createAuditVerifier } from './http/auth.js';
import { PrivacyPolicy } from './http/privacy.js';
import { auditRouteGroups } from './http/routes.js';
import { AuditMaintenanceActor } from './maintenance-actor.js';
import { AuditMetrics } from './metrics.js';
import { AuditStore } from './store/audit-store.js';

function warnAboutSettings(ctx: PluginContext, config: ReturnType<typeof loadAuditConfig>): void {
  const { log } = ctx;
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

export const plugin: Plugin = {
  name: 'audit',
  create(ctx) {
    const config = loadAuditConfig(ctx.env);
    const version = readVersion();
    ctx.log.info(
      { auth_enabled: config.auth.enabled, version, sources: config.sources },
      'audit plugin starting',
    );
    warnAboutSettings(ctx, config);

    const store = new AuditStore(() => ctx.db() as Database);
    const metrics = new AuditMetrics(ctx.metrics, () => store.repos().sources.all());
    const collector = new AuditCollectorActor({ config, store, metrics, log: ctx.log });
    const maintenance = new AuditMaintenanceActor({ config, store, log: ctx.log });
    const groups = auditRouteGroups({
      config,
      store,
      collector,
      privacy: new PrivacyPolicy(config.privacy),
      metrics,
      verifier: createAuditVerifier(config.auth),
      log: ctx.log,
      version,
    });
    for (const { path, app } of groups) ctx.mount(path, app);
    return [collector, maintenance];
  },
};
