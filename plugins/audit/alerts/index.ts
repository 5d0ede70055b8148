/**
 * Alert rules (issue 14): `/api/rules` and `/api/alerts` are served whenever the plugin runs, so
 * rules can be written before they are switched on; evaluation, MQTT and the webhook run only
 * with ALERTS_ENABLED=true (the AlertActor). `/api/config/features` reports which.
 */
import type { Hono, MiddlewareHandler } from 'hono';
import type { HubBus } from '../../../src/domain/events.js';
import type { KernelLogger } from '../../../src/kernel/actor.js';
import type { ModuleMetrics } from '../../../src/module.js';
import type { AuditEnv } from '../http/context.js';
import type { AuditConfig } from '../settings.js';
import type { AuditStore } from '../store/audit-store.js';
import { AlertActor, type AlertActorDeps } from './alert-actor.js';
import { AlertRepository } from './alert-repository.js';
import { alertsRoutes, rulesRoutes } from './routes.js';
import type { ApiSigmaReport } from './schemas.js';

export interface Alerting {
  alerts: () => AlertRepository;
  /** Present exactly when ALERTS_ENABLED=true: rules are evaluated. */
  actor?: AlertActor;
  config: AuditConfig;
  /** The Sigma rules read at start-up (sigma/), for `GET /api/rules/sigma`. */
  sigma?: ApiSigmaReport;
}

export function createAlerting(deps: {
  config: AuditConfig;
  store: AuditStore;
  bus: HubBus;
  metrics: ModuleMetrics;
  log: KernelLogger;
  webhook?: AlertActorDeps['webhook'];
  sigma?: ApiSigmaReport;
}): Alerting {
  const { config } = deps;
  return {
    alerts: () => AlertRepository.on(deps.store.repos().db),
    config,
    ...(deps.sigma ? { sigma: deps.sigma } : {}),
    ...(config.features.alertsEnabled
      ? {
          actor: new AlertActor({
            config: config.alerts,
            store: deps.store,
            bus: deps.bus,
            metrics: deps.metrics,
            log: deps.log,
            ...(deps.webhook ? { webhook: deps.webhook } : {}),
          }),
        }
      : {}),
  };
}

/** What `/api/config/features` says about alerts: from what runs. */
export function alertFeatures(alerting: Alerting | undefined) {
  const actor = alerting?.actor;
  return actor
    ? {
        evaluating: true,
        webhook: configured(alerting.config.alerts.webhook),
        teams: configured(alerting.config.alerts.teams),
        slack: configured(alerting.config.alerts.slack),
        time_zone: alerting.config.alerts.timeZone,
      }
    : null;
}

const configured = (destination: unknown) =>
  destination ? ('configured' as const) : ('not_configured' as const);

/**
 * The route groups (issue 23): rules are read with a reader role and written with an admin role
 * (AUDIT_READER_ROLES, AUDIT_ADMIN_ROLES); alerts carry the firing event's actor and target,
 * outside privacy gating, so they stay with the admins.
 */
export function alertRouteGroups(
  alerting: Alerting,
  checks: {
    group: (register: (app: Hono<AuditEnv>) => void) => Hono;
    /** Reads need a reader role, writes an admin role. */
    rules: MiddlewareHandler<AuditEnv>;
    admins: MiddlewareHandler<AuditEnv>;
  },
): Array<{ path: string; app: Hono }> {
  const { group, rules, admins } = checks;
  return [
    {
      path: '/api/rules',
      app: group((app) => {
        app.use('*', rules);
        rulesRoutes(alerting, app);
      }),
    },
    {
      path: '/api/alerts',
      app: group((app) => {
        app.use('*', admins);
        alertsRoutes(alerting, app);
      }),
    },
  ];
}
