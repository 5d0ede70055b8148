/**
 * Mounts the audit routes on the hub's one HTTP server. Each path group is its own Hono app, so
 * its middleware (security headers, CORS, rate limit, audit trail, bearer check) runs for the
 * audit routes only — never for the hub's weather, nodes, health or metrics routes. Errors are
 * thrown as ProblemError and become problem details in the hub's one onError.
 *
 * Order inside a group: security headers wrap everything (so errors carry them too); CORS answers
 * preflights; the trail sees the final status, rate-limit refusals included (it counts them);
 * the rate limiter refuses before any work; the bearer check sets the caller the trail records.
 */
import { Hono, type MiddlewareHandler } from 'hono';
import type { TokenVerifier } from '../../../src/auth/jwt-verifier.js';
import type { KernelLogger } from '../../../src/kernel/actor.js';
import { type Alerting, alertRouteGroups } from '../alerts/index.js';
import { type AiFeatures, askRoutes, explainRoutes, jobRoutes } from '../ask/routes.js';
import type { AuditCollectorActor } from '../collector-actor.js';
import type { AuditMetrics } from '../metrics.js';
import { SavedSearchRepository } from '../saved/repository.js';
import { savedSearchRoutes } from '../saved/routes.js';
import type { AuditConfig } from '../settings.js';
import type { SiemForwarderActor } from '../siem/forwarder-actor.js';
import type { AuditStore } from '../store/audit-store.js';
import { timelineRoutes } from '../timeline/routes.js';
import { configRoutes, fetchRoutes, filterOptionsRoutes, sourceHealthRoutes } from './admin-routes.js';
import { authenticate, requireAccess, requireAccessByMethod } from './auth.js';
import { ANONYMOUS, type AuditEnv } from './context.js';
import { eventsRoutes } from './events-routes.js';
import { ExportSlots, exportRoutes } from './export.js';
import type { PrivacyPolicy } from './privacy.js';
import { auditTierOf, type RateLimiter, rateLimit } from './rate-limit.js';
import { corsFor, securityHeaders } from './security.js';
import { auditTrail } from './trail.js';
import { trailRoutes } from './trail-routes.js';
import { webhookRoutes } from './webhook-routes.js';

export interface AuditRouteDeps {
  config: AuditConfig;
  store: AuditStore;
  collector: AuditCollectorActor;
  privacy: PrivacyPolicy;
  metrics: AuditMetrics;
  verifier: TokenVerifier | undefined;
  log: KernelLogger;
  version: string;
  /** Counts in the cache store (SQLite or CACHE_URL); built by the plugin (index.ts). */
  limiter: RateLimiter;
  /** Issue 13: present only with AI_FEATURES_ENABLED (otherwise /api/ask, /api/jobs and explain are 404). */
  ai?: AiFeatures;
  /** Issue 14: alert rules and alerts (evaluated only with ALERTS_ENABLED). */
  alerting?: Alerting;
  /** Issue 14: the SIEM forwarder, present only with SIEM_ENABLED. */
  siem?: SiemForwarderActor;
}

export interface AuditRouteGroup {
  path: string;
  app: Hono;
}

export function auditRouteGroups(deps: AuditRouteDeps): AuditRouteGroup[] {
  const { config, store, log } = deps;
  const limiter = deps.limiter;
  const common: MiddlewareHandler<AuditEnv>[] = [
    securityHeaders({ auth: config.auth }),
    corsFor(config.corsOrigins),
    auditTrail({ store, log, refusalsPerHour: config.trailRefusalsPerHour }),
    rateLimit({ limiter, tierOf: auditTierOf, onLimited: (tier) => deps.metrics.limited(tier) }),
  ];
  // AUDIT_EXPORT_MAX_CONCURRENT, shared by the events export and the trail's.
  const slots = new ExportSlots(config.exportMaxConcurrent);
  const bearer = authenticate({ auth: config.auth, verifier: deps.verifier, log });
  const open: MiddlewareHandler<AuditEnv> = async (c, next) => {
    c.set('caller', ANONYMOUS);
    return next();
  };

  const group = (withAuth: boolean, register: (app: Hono<AuditEnv>) => void): Hono => {
    const app = new Hono<AuditEnv>();
    for (const m of common) app.use('*', m);
    app.use('*', withAuth ? bearer : open);
    register(app);
    return app as unknown as Hono;
  };
  // Issue 23: every data route needs a reader role; changes, fetches and the trail an admin role.
  const readers = requireAccess(config.auth, 'read');
  const admins = requireAccess(config.auth, 'admin');
  /** A group of audit data: the bearer check, then the reader check, then the routes. */
  const data = (register: (app: Hono<AuditEnv>) => void): Hono =>
    group(true, (app) => {
      app.use('*', readers);
      register(app);
    });

  return [
    {
      path: '/api/events',
      app: data((app) => {
        // Registered before /:id, which would otherwise take "export" for an id.
        exportRoutes(
          { store, privacy: deps.privacy, maxConcurrent: config.exportMaxConcurrent, log, slots },
          app,
        );
        eventsRoutes({ store, privacy: deps.privacy, admins }, app);
        if (deps.ai) explainRoutes(deps.ai, app);
      }),
    },
    {
      // Issue 29: saved searches, a reader's own (saved/access.ts says who sees and changes which).
      path: '/api/saved-searches',
      app: data((app) =>
        savedSearchRoutes(
          {
            store,
            privacy: deps.privacy,
            auth: config.auth,
            saved: () => SavedSearchRepository.on(store.repos().db),
            onRun: () => deps.metrics.savedSearchRun(),
          },
          app,
        ),
      ),
    },
    ...(deps.alerting
      ? alertRouteGroups(deps.alerting, {
          group: (register) => group(true, register),
          rules: requireAccessByMethod(config.auth),
          admins,
        })
      : []),
    ...(deps.ai
      ? [
          { path: '/api/ask', app: data((app) => askRoutes(deps.ai!, app)) },
          { path: '/api/jobs', app: data((app) => jobRoutes(deps.ai!, app)) },
        ]
      : []),
    {
      // Issue 14: the readable trail, for administrators (AUDIT_ADMIN_ROLES, default `admin`).
      path: '/api/audit-trail',
      app: group(true, (app) => {
        app.use('*', admins);
        trailRoutes({ store, slots, log }, app);
      }),
    },
    // Issue 29: an actor's timeline.
    { path: '/api/actors', app: data((app) => timelineRoutes({ store, privacy: deps.privacy }, app)) },
    { path: '/api/filter-options', app: data((app) => filterOptionsRoutes(deps, app)) },
    {
      path: '/api/source-health',
      app: data((app) =>
        sourceHealthRoutes({ store, collector: deps.collector, config, siem: deps.siem }, app),
      ),
    },
    {
      path: '/api/fetch',
      app: group(true, (app) => {
        app.use('*', admins);
        fetchRoutes({ collector: deps.collector, config }, app);
      }),
    },
    {
      path: '/api/config',
      app: group(false, (app) =>
        configRoutes(
          { config, version: deps.version, ai: deps.ai, alerting: deps.alerting, siem: deps.siem },
          app,
        ),
      ),
    },
    {
      path: '/api/webhooks',
      app: group(false, (app) =>
        webhookRoutes(
          {
            secret: config.webhookClientSecret,
            collector: deps.collector,
            directoryCollected: config.sources.includes('directory'),
          },
          app,
        ),
      ),
    },
  ];
}
