/**
 * The operational routes of the audit plugin: `/api/filter-options`, `/api/source-health`,
 * `POST /api/fetch` (an admin-triggered fetch; rate-limit tier `fetch`), and the frontend's
 * `/api/config/features` and `/api/config/auth`. (`/api/version`, `/health` and `/metrics` are
 * the hub's own.)
 */
import type { Hono } from 'hono';
import {
  COMMON_PROBLEMS,
  HEADERS,
  type OperationSpec,
  problem,
  type ResponseSpec,
} from '../../../src/http/openapi.js';
import { ProblemError, validationProblem } from '../../../src/http/problem.js';
import { type Alerting, alertFeatures } from '../alerts/index.js';
import type { AiFeatures } from '../ask/routes.js';
import type { AuditCollectorActor } from '../collector-actor.js';
import { DEFAULT_TENANT } from '../normalize.js';
import type { AuditConfig } from '../settings.js';
import type { SiemForwarderActor } from '../siem/forwarder-actor.js';
import type { AuditStore } from '../store/audit-store.js';
import { filterOptions } from '../store/filter-options.js';
import { mayAccess } from './auth.js';
import { type AuditEnv, callerOf, jsonBody } from './context.js';
import { checkedOperation, signedInOperation } from './operation.js';
import type { PrivacyPolicy } from './privacy.js';
import {
  authConfigSchema,
  featuresSchema,
  fetchAcceptedSchema,
  fetchBodySchema,
  filterOptionsSchema,
  sourceHealthSchema,
} from './schemas.js';
import { trailOf } from './trail.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The forwarder's status and lag, as `/health` shows them. */
function siemState(siem: SiemForwarderActor): { status: unknown; lag_events: unknown } {
  const d = siem.describe().siem as { status: unknown; lag_events: unknown };
  return { status: d.status, lag_events: d.lag_events };
}

/** The OpenAPI operations of filter options, source health, fetch and the frontend configuration (the routes below); `signedIn`: the refusals of the plugin's signed-in routes. */
export function adminOperations(signedIn: Record<number, ResponseSpec>): OperationSpec[] {
  const adminOnly = problem(
    'This needs an administrator role (AUDIT_ADMIN_ROLES, default `admin`); `access` (`admin`) and `roles` say which.',
  );
  return [
    signedInOperation(signedIn, {
      method: 'get',
      path: '/api/filter-options',
      operationId: 'getFilterOptions',
      tag: 'operations',
      summary: 'Dropdown values for the filters (privacy-gated ones left out)',
      responses: { 200: { description: 'The values.', body: filterOptionsSchema } },
    }),
    signedInOperation(signedIn, {
      method: 'get',
      path: '/api/source-health',
      operationId: 'getSourceHealth',
      tag: 'operations',
      summary: 'Per source: the last attempt and success, errors, watermark and counts',
      responses: { 200: { description: 'Every collected source.', body: sourceHealthSchema } },
    }),
    checkedOperation(signedIn, {
      method: 'post',
      path: '/api/fetch',
      operationId: 'requestFetch',
      tag: 'operations',
      summary: 'Fetch now (administrators; rate-limit tier fetch)',
      body: { schema: fetchBodySchema, required: false },
      responses: {
        202: {
          description: 'Queued.',
          body: fetchAcceptedSchema,
          headers: { Location: { description: '`/api/source-health`: where to watch it.' } },
        },
        403: adminOnly,
        409: problem('Collection is not configured.'),
        415: COMMON_PROBLEMS.notJson,
        503: problem('The collector is busy, sign-in is misconfigured, or the identity provider is down.', {
          'Retry-After': HEADERS.retryAfter,
        }),
      },
    }),
    {
      method: 'get',
      path: '/api/config/features',
      operationId: 'getFeatures',
      tag: 'operations',
      summary: 'Feature flags for the frontend (no sign-in, no rate limit)',
      responses: { 200: { description: 'The flags.', body: featuresSchema } },
    },
    {
      method: 'get',
      path: '/api/config/auth',
      operationId: 'getAuthConfig',
      tag: 'operations',
      summary: 'Sign-in settings for the frontend (no sign-in, no rate limit)',
      responses: { 200: { description: 'The settings.', body: authConfigSchema } },
    },
  ];
}

export function filterOptionsRoutes(
  deps: { store: AuditStore; privacy: PrivacyPolicy },
  app: Hono<AuditEnv>,
): void {
  app.get('/', (c) => c.json(filterOptions(deps.store.repos().db, deps.privacy.scopeFor(callerOf(c)))));
}

export function sourceHealthRoutes(
  deps: { store: AuditStore; collector: AuditCollectorActor; config: AuditConfig; siem?: SiemForwarderActor },
  app: Hono<AuditEnv>,
): void {
  app.get('/', (c) => {
    // Issue 14: SIEM forwarding is a destination, not a source, but its failures belong where an
    // administrator looks for collection trouble: null when SIEM_ENABLED is off.
    const siem = (deps.siem?.describe().siem as Record<string, unknown> | undefined) ?? null;
    const repos = deps.store.repos();
    // Issue 29: one entry per (tenant, source) the settings collect; without collection, the
    // default tenant's sources (as `not_configured`).
    const tenants = deps.config.tenants.length
      ? deps.config.tenants
      : [{ name: DEFAULT_TENANT, sources: deps.config.sources }];
    const collected = new Map(tenants.map((t) => [t.name, t.sources]));
    const rows = repos.sources.all().filter((r) => collected.get(r.tenant)?.includes(r.source));
    return c.json({
      collection: deps.collector.configured ? 'on' : 'not_configured',
      // Issue 15: the console shows "Fetch now" only to callers the fetch route would let through.
      fetch_allowed: mayAccess(callerOf(c), deps.config.auth, 'admin'),
      siem,
      data: rows.map((r) => ({
        tenant: r.tenant,
        source: r.source,
        status: !deps.collector.configured
          ? 'not_configured'
          : deps.collector.isFetching(r.tenant, r.source)
            ? 'running'
            : r.status,
        last_attempt_time: iso(r.last_attempt_time),
        last_success_time: iso(r.last_success_time),
        error: r.last_error,
        consecutive_failures: r.consecutive_failures,
        watermark: iso(r.watermark),
        events_fetched: r.events_fetched,
        events_stored: r.events_stored,
        duplicates: r.duplicates,
        malformed: r.malformed,
        throttled: r.throttled,
        failed_runs: r.errors,
        pending_blobs:
          r.source === 'directory' || r.source === 'device_management'
            ? 0
            : repos.sources.forTenant(r.tenant_id).pendingBlobCount(r.source),
      })),
    });
  });
}

export function fetchRoutes(
  deps: { collector: AuditCollectorActor; config: AuditConfig },
  app: Hono<AuditEnv>,
): void {
  app.post('/', async (c) => {
    // Issue 29: every source some tenant collects (AUDIT_SOURCES, AUDIT_<NAME>_SOURCES).
    const collected = [
      ...new Set([...deps.config.sources, ...deps.config.tenants.flatMap((t) => t.sources)]),
    ];
    let sources = collected;
    if (c.req.header('content-length') !== '0' && c.req.header('content-type')) {
      const parsed = fetchBodySchema.safeParse(await jsonBody(c));
      if (!parsed.success) throw validationProblem(parsed.error);
      if (parsed.data.sources) {
        const off = parsed.data.sources.filter((s) => !collected.includes(s));
        if (off.length) {
          throw new ProblemError(400, 'invalid sources', {
            errors: [{ field: 'sources', message: `not collected here (AUDIT_SOURCES): ${off.join(', ')}` }],
          });
        }
        sources = parsed.data.sources;
      }
    }
    // Not one transaction: the trail row first (503, nothing queued, when it cannot be written);
    // the trail middleware settles its status and outcome afterwards.
    trailOf(c).before(202, { action: 'fetch', sources });
    const outcome = deps.collector.requestFetch('admin', sources);
    if (outcome === 'not_configured') {
      throw new ProblemError(
        409,
        'collection is not configured: set AUDIT_TENANT_ID, AUDIT_CLIENT_ID and AUDIT_CLIENT_SECRET',
      );
    }
    if (outcome === 'busy') {
      throw new ProblemError(503, 'the collector is busy; try again shortly', {
        headers: { 'retry-after': '30' },
      });
    }
    c.set('trailDetail', { action: 'fetch', sources, outcome });
    return c.json({ status: outcome, sources }, 202, { location: '/api/source-health' });
  });
}

export function configRoutes(
  deps: {
    config: AuditConfig;
    version: string;
    ai?: AiFeatures | undefined;
    alerting?: Alerting | undefined;
    siem?: SiemForwarderActor | undefined;
  },
  app: Hono<AuditEnv>,
): void {
  const { config, ai } = deps;
  const llm = config.ai.llm;
  app.get('/features', (c) =>
    c.json({
      version: deps.version,
      // From what runs: the ask routes exist exactly when `ai` does (AI_FEATURES_ENABLED).
      ai_features_enabled: ai !== undefined,
      ai: ai
        ? {
            ask: true,
            explain: true,
            async_jobs: true,
            llm: llm ? ('configured' as const) : ('not_configured' as const),
            model: llm?.model ?? null,
            private_network_model: llm?.allowPrivateNetwork ?? false,
            max_events: config.ai.maxEvents,
            cache_store: ai.backend.kind,
          }
        : null,
      // Issue 14: alerts from what runs (the evaluating actor exists exactly with ALERTS_ENABLED).
      alerts_enabled: deps.alerting?.actor !== undefined,
      alerts: alertFeatures(deps.alerting),
      // Issue 14: from what runs (the forwarding actor exists exactly with SIEM_ENABLED).
      siem_enabled: deps.siem !== undefined,
      siem: deps.siem
        ? { format: deps.siem.config.format, endpoint: deps.siem.config.url.host, ...siemState(deps.siem) }
        : null,
      export_formats: ['csv', 'json'],
      bulk_tag_limit: 10_000,
      collection: config.tenants.length ? 'on' : 'not_configured',
      sources: config.sources,
      directory_webhook: config.webhookClientSecret !== undefined,
      auth: config.auth.state,
    }),
  );
  app.get('/auth', (c) =>
    c.json({
      enabled: config.auth.enabled,
      // off | on | misconfigured: the frontend's "Auth: OFF" / "Auth: misconfigured" button.
      status: config.auth.state,
      ...(config.auth.state === 'misconfigured' ? { missing: config.auth.missing } : {}),
      issuer: config.auth.issuer ?? null,
      audience: config.auth.audience ?? null,
      client_id: config.auth.clientId ?? null,
      roles_claim: config.auth.rolesClaim,
    }),
  );
}
