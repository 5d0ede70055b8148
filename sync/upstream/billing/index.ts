/**
 * Billing on the upstream (issue 12: "billing there is reachable by BTCPay's webhooks (a site
 * behind NAT is not), and the subscriptions it activates flow down to the sites that carry the
 * nodes"). `PLUGINS=billing` with the hub's BTCPAY_* / BILLING_* settings (settings.ts).
 *
 * The hub's billing plugin, unchanged in its rules: the same BillingService and PeriodExpiry,
 * the same routes under `/api/v1/billing` (plans, buy, list, renew, the BTCPay webhook with its
 * constant-time signature check, the OpenAPI document), over PostgreSQL (pg-storage.ts) instead
 * of SQLite, with the upstream's own tokens. A settled invoice makes or extends an upstream
 * subscription (source `billing`), whose `subscription` commands go down to the sites
 * (grants.ts). The jobs run in every process, each run under an advisory lock (jobs.ts).
 * docs/sync.md "Billing on the upstream".
 */
import type { Hono } from 'hono';
import type pg from 'pg';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Principal } from '../../../src/auth/hub-identity.js';
import type { TokenVerifier, VerifiedIdentity } from '../../../src/auth/jwt-verifier.js';
import { type AuthEnv, requireAuth } from '../../../src/auth/require-auth.js';
import { BillingService } from '../../../src/billing/billing-service.js';
import type { BillingChange } from '../../../src/billing/events.js';
import { GreenfieldClient } from '../../../src/billing/greenfield-client.js';
import { billingOpenApiDocument } from '../../../src/billing/http/openapi.js';
import { billingRoutes } from '../../../src/billing/http/routes.js';
import { BillingMetrics } from '../../../src/billing/metrics.js';
import { PeriodExpiry } from '../../../src/billing/period-expiry.js';
import { type BillingSettings, billingConfigFrom } from '../../../src/billing/settings.js';
import { openApiRoutes } from '../../../src/http/api-docs.js';
import type { Logger } from '../../../src/log.js';
import { type BillingJobName, BillingJobs } from './jobs.js';
import { PgBillingStorage } from './pg-storage.js';

export const BILLING_METRICS_PREFIX = 'meshhub_upstream_billing_';

export interface UpstreamBillingDeps {
  settings: BillingSettings;
  pool: pg.Pool;
  identity: { verifier: TokenVerifier; principalOf(v: VerifiedIdentity): Principal };
  log: Logger;
  /** The upstream's /metrics registry. */
  registry: Registry;
  version: string;
  now?: () => number;
}

export interface UpstreamBilling {
  /** Mount at `/api/v1/billing`. */
  readonly routes: Hono<AuthEnv>;
  readonly service: BillingService;
  readonly storage: PgBillingStorage;
  /** After the migrations: moves periods that ended while no process ran, then schedules the jobs. */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Runs a job now under its lock; false when another run holds it. */
  runJob(name: BillingJobName): Promise<boolean>;
}

export function upstreamBilling(deps: UpstreamBillingDeps): UpstreamBilling {
  const { pool, identity } = deps;
  const log = deps.log.child({ component: 'billing' });
  const config = billingConfigFrom(deps.settings);
  const storage = new PgBillingStorage(pool);
  const registers = [deps.registry];
  const metrics = new BillingMetrics(
    {
      counter: (c) => new Counter({ ...c, name: `${BILLING_METRICS_PREFIX}${c.name}`, registers }),
      gauge: (c) => new Gauge({ ...c, name: `${BILLING_METRICS_PREFIX}${c.name}`, registers }),
    },
    () => storage.countPaid(),
  );
  // No bus and no MQTT on the upstream: every change is stored (billing_changes) and logged.
  const onChange = (change: BillingChange) =>
    log.info(
      { subscription: change.subscriptionId, from: change.from, to: change.to, cause: change.cause },
      'billing change',
    );
  const service = new BillingService({
    storage,
    client: new GreenfieldClient(config),
    config,
    log,
    metrics,
    onChange,
    ...(deps.now ? { now: deps.now } : {}),
  });
  const expiry = new PeriodExpiry({
    storage,
    onChange,
    graceMs: config.graceMs,
    ...(deps.now ? { now: deps.now } : {}),
  });
  const jobs = new BillingJobs(
    pool,
    {
      poll: { cron: config.pollCron, run: () => service.pollOpen() },
      expiry: {
        cron: config.expiryCron,
        run: async () => {
          await expiry.expireDue();
          await expiry.forgetOldDeliveries();
        },
      },
    },
    log,
  );
  const routes = billingRoutes({
    auth: {
      require: (roles) => requireAuth(identity.verifier, { roles: roles ?? [] }),
      principalOf: (verified) => identity.principalOf(verified),
    },
    service,
    config,
    metrics,
  });
  routes.route('/', openApiRoutes(billingOpenApiDocument(deps.version), { docs: false }));

  return {
    routes,
    service,
    storage,
    async start() {
      log.info({ btcpay: config.baseUrl.origin, store: config.storeId }, 'billing on the upstream starting');
      await jobs.runNow('expiry');
      jobs.start();
    },
    stop: () => jobs.stop(),
    runJob: (name) => jobs.runNow(name),
  };
}
