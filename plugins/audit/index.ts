/**
 * The audit plugin (`PLUGINS=audit`): collects audit events from Microsoft Graph and the Office 365
 * Management Activity API, keeps them in the hub's SQLite file, and serves search, tagging,
 * comments and export (spec: audit-event-search-service.md; issue 6). Asks, explanations,
 * alerts, SIEM forwarding and MCP come later: they plug into `AuditStore.onStored`, the
 * `PrivacyPolicy` and the `ask` rate-limit tier that are already here.
 */

import { openApiRoutes } from '../../src/http/api-docs.js';
import { isLoopbackHost } from '../../src/http/outbound-url.js';
import type { Logger } from '../../src/log.js';
import { defineModule } from '../../src/module.js';
import { createAlerting } from './alerts/index.js';
import { DESTINATION_SETTINGS } from './alerts/settings.js';
import { createAiFeatures, openCacheBackend } from './ask/features.js';
import { AuditCacheStoreActor } from './cache/cache-actor.js';
import { AuditCollectorActor } from './collector-actor.js';
import { AUDIT_ALERTS_TOPIC } from './events.js';
import { auditOpenApiDocument } from './http/openapi.js';
import { PrivacyPolicy } from './http/privacy.js';
import { RateLimiter } from './http/rate-limit.js';
import { auditRouteGroups } from './http/routes.js';
import { AuditMaintenanceActor } from './maintenance-actor.js';
import { auditMcpHttpTools } from './mcp/http.js';
import { AuditMetrics } from './metrics.js';
import { GraphSubscriptionActor } from './microsoft/graph-subscription-actor.js';
import {
  type AuditConfig,
  AuditConfigError,
  anonymousAccessProblem,
  auditConfigFrom,
  auditSettings,
} from './settings.js';
import { SiemForwarderActor } from './siem/forwarder-actor.js';
import { setUpSigma } from './sigma/index.js';
import { AuditStore } from './store/audit-store.js';

function warnAboutSettings(log: Logger, config: AuditConfig, listenHost: string): void {
  if (config.auth.state === 'off' && config.auth.allowAnonymous && !isLoopbackHost(listenHost)) {
    log.warn(
      { http_host: listenHost },
      'AUDIT_ALLOW_ANONYMOUS is true and AUTH_ENABLED is false: anyone who reaches the hub can read and change the audit data',
    );
  }
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
  for (const [destination, setting] of Object.entries(DESTINATION_SETTINGS)) {
    if (config.alerts[destination as keyof typeof DESTINATION_SETTINGS] && !config.features.alertsEnabled)
      log.warn({}, `${setting} is set but ALERTS_ENABLED is false: rules are not evaluated`);
  }
  for (const setting of config.obsoleteSettings) {
    log.warn(
      { setting },
      `${setting} no longer does anything (the rate limits count in the cache store, which has no client table to bound); remove it`,
    );
  }
  if (config.siem) {
    // Never the token or the secret: the endpoint's host and the format.
    log.info({ endpoint: config.siem.url.host, format: config.siem.format }, 'SIEM forwarding on');
  }
}

export const auditModule = defineModule({
  name: 'audit',
  settings: auditSettings,
  async create(ctx) {
    const provider = ctx.auth.provider;
    const config = auditConfigFrom(
      ctx.settings,
      provider ? { ...provider, rolesClaim: provider.rolesClaim } : undefined,
      ctx.auth.providerMissing,
    );
    const { version } = ctx.hub;
    // Issue 23: no anonymous audit data beyond this machine unless AUDIT_ALLOW_ANONYMOUS says so.
    const anonymous = anonymousAccessProblem(config, ctx.hub.listenHost);
    if (anonymous) throw new AuditConfigError([anonymous]);
    ctx.log.info(
      { auth_enabled: config.auth.enabled, version, sources: config.sources },
      'audit plugin starting',
    );
    warnAboutSettings(ctx.log, config, ctx.hub.listenHost);

    const store = new AuditStore(() => ctx.db);
    const metrics = new AuditMetrics(ctx.metrics, () => store.repos().sources.all());
    const collector = new AuditCollectorActor({ config, store, metrics, log: ctx.log });
    const maintenance = new AuditMaintenanceActor({ config, store, log: ctx.log });
    const subscription = new GraphSubscriptionActor({
      config,
      store,
      client: () => collector.graphClient,
      log: ctx.log,
    });
    ctx.schedule('fetch', config.fetchCron, () => collector.requestFetch('schedule'));
    ctx.schedule('maintenance', config.maintenanceCron, () => maintenance.runOnce());
    // Issue 13: the rate-limit tiers count in the cache store (SQLite, or Redis with CACHE_URL).
    const cacheStore = new AuditCacheStoreActor(await openCacheBackend(config, store, ctx.log));
    ctx.schedule('cache-purge', config.maintenanceCron, async () => {
      await cacheStore.purgeExpired();
    });
    const limiter = new RateLimiter(config.rateLimits, cacheStore.backend.rates, {
      onStoreError: (error) =>
        ctx.log.warn(
          { err: error.message },
          'the rate limiter cannot reach its cache store: rate-limited audit routes answer 503 until it is back',
        ),
    });
    // Issue 13: asks, explanations and background jobs, only with AI_FEATURES_ENABLED.
    const ai = config.features.aiFeaturesEnabled
      ? await createAiFeatures({ config, store, privacy: new PrivacyPolicy(config.privacy), log: ctx.log })
      : undefined;
    if (ai) {
      ctx.schedule('ask-cache-purge', config.maintenanceCron, async () => {
        await ai.backend.jobs.purgeExpired();
      });
    }
    // Issue 14: SIEM forwarding, an actor only with SIEM_ENABLED (config.siem).
    const siem = config.siem
      ? new SiemForwarderActor({ config: config.siem, store, metrics: ctx.metrics, log: ctx.log, version })
      : undefined;
    // Issue 14: alert rules; evaluated (an actor) only with ALERTS_ENABLED.
    // Issue 29: Sigma rules from SIGMA_RULES_DIR, run as alert rules (read at start-up).
    const sigma = setUpSigma(config, store.repos().db, ctx.log, ctx.metrics);
    const alerting = createAlerting({
      config,
      store,
      bus: ctx.bus,
      metrics: ctx.metrics,
      log: ctx.log,
      sigma,
    });
    // Alerts name people and what they did: admins only, and a non-admin naming them is refused.
    ctx.mqtt.topic('meshhub/audit/#', { readers: 'admin', refuseOthers: true });
    ctx.bus.on(ctx.owner, 'audit.alert', ({ alert }) =>
      ctx.mqtt.publish(AUDIT_ALERTS_TOPIC, JSON.stringify(alert)),
    );
    const groups = auditRouteGroups({
      config,
      store,
      collector,
      privacy: new PrivacyPolicy(config.privacy),
      metrics,
      verifier: config.auth.state === 'on' ? ctx.auth.verifier : undefined,
      log: ctx.log,
      version,
      limiter,
      ...(ai ? { ai } : {}),
      alerting,
      ...(siem ? { siem } : {}),
    });
    for (const { path, app } of groups) ctx.mount(path, app);
    // Issue 29: the audit tools over MCP over HTTP (/mcp, when MCP_HTTP_ENABLED), by the API's rules.
    ctx.bus.emit('mcp.tools', {
      name: 'audit',
      contribution: auditMcpHttpTools({
        auth: config.auth,
        store,
        privacy: new PrivacyPolicy(config.privacy),
        ...(ai ? { ask: ai.service } : {}),
        limiter,
        onLimited: (tier) => metrics.limited(tier),
      }),
    });
    // The audit API's description, built from the schemas its routes validate with.
    ctx.mount(
      '/api',
      openApiRoutes(auditOpenApiDocument(version, { ai: ai !== undefined }), { docs: ctx.hub.apiDocs }),
    );
    return {
      actors: [
        cacheStore,
        ...(ai ? [ai.runner] : []),
        ...(alerting.actor ? [alerting.actor] : []),
        ...(siem ? [siem] : []),
        collector,
        maintenance,
        subscription,
      ],
    };
  },
});
