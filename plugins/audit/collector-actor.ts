/**
 * The audit collector: fetches every configured source on AUDIT_FETCH_CRON, on an admin's request
 * (`POST /api/fetch`) and early when the directory webhook says something changed.
 *
 * Issue 29: one lane per tenant (AUDIT_TENANTS, or the one `default`), each with its own token
 * provider, clients, mailbox and Management API session: lanes share no queue, lock or timer,
 * so a tenant that times out or is throttled for minutes never delays another's fetch.
 * Within a lane, fetch requests wait in a bounded mailbox (overflow: reject — they are commands)
 * and run one at a time; sources within a request are fetched side by side. A request for a source that is
 * already waiting is merged into the waiting one, so a burst of webhook notifications costs one
 * fetch. A run never throws: every failure ends in source health, the next run resumes, and
 * the actor only crashes on a bug.
 */
import { Actor, type KernelLogger } from '../../src/kernel/actor.js';
import type { Mailbox } from '../../src/kernel/mailbox.js';
import { fetchGraphSource } from './collect/graph-fetcher.js';
import { fetchManagementSource, type ManagementSession } from './collect/management-fetcher.js';
import { emptyTotals, type SourceRun } from './collect/source-run.js';
import type { AuditMetrics } from './metrics.js';
import { addressGuardedFetch } from './microsoft/address-guard.js';
import { ClientCredentialsTokens, defaultScope } from './microsoft/token-provider.js';
import { UpstreamClient, UpstreamError } from './microsoft/upstream.js';
import type { AuditConfig } from './settings.js';
import { isGraphSource, type SourceName } from './sources.js';
import type { AuditStore } from './store/audit-store.js';
import type { SourceStates } from './store/source-state.js';
import type { TenantConfig } from './tenants/settings.js';

export type FetchReason = 'start' | 'schedule' | 'admin' | 'webhook';

export interface FetchRequest {
  reason: FetchReason;
  sources: SourceName[];
}

export type FetchRequestOutcome = 'queued' | 'already_queued' | 'not_configured' | 'busy';

/** One tenant's collection: nothing in it is shared with another tenant's. */
interface TenantLane {
  tenant: TenantConfig;
  inbox: Mailbox<FetchRequest>;
  waiting: Set<SourceName>;
  running: Set<SourceName>;
  graph?: UpstreamClient;
  management?: UpstreamClient;
  session: ManagementSession;
}

export class AuditCollectorActor extends Actor {
  readonly name = 'audit-collector';
  override readonly dependsOn = ['store'];
  override readonly required = false;

  private readonly lanes: TenantLane[];
  private abort = new AbortController();

  constructor(
    private readonly deps: {
      config: AuditConfig;
      store: AuditStore;
      metrics: AuditMetrics;
      log: KernelLogger;
      now?: () => number;
      fetchImpl?: typeof fetch;
      /** DNS for the address guard (tests). */
      resolve?: (host: string) => Promise<string[]>;
    },
  ) {
    super();
    const single = deps.config.tenants.length === 1;
    this.lanes = deps.config.tenants.map((tenant) => {
      const lane: TenantLane = {
        tenant,
        waiting: new Set(),
        running: new Set(),
        session: { subscribed: new Set() },
        inbox: undefined as unknown as Mailbox<FetchRequest>,
      };
      lane.inbox = this.createMailbox<FetchRequest>(single ? 'fetch' : `fetch:${tenant.name}`, {
        capacity: 16,
        overflow: 'reject',
        handle: (request) => this.run(lane, request),
      });
      return lane;
    });
  }

  /** The first tenant's Graph client, once started (the subscription actor shares its token). */
  get graphClient(): UpstreamClient | undefined {
    return this.lanes[0]?.graph;
  }

  get configured(): boolean {
    return this.lanes.length > 0;
  }

  /** Whether `tenant`'s `source` is being fetched now (the health route). */
  isFetching(tenant: string, source: SourceName): boolean {
    return this.lanes.some((l) => l.tenant.name === tenant && l.running.has(source));
  }

  /** A tenant's watermarks and health (its audit_tenants row is made on first use). */
  private states(tenant: TenantConfig): SourceStates {
    const repos = this.deps.store.repos();
    return repos.sources.forTenant(repos.dictionaries.tenants.idOf(tenant.name));
  }

  async start(): Promise<void> {
    const { config, store, log } = this.deps;
    store.repos().sources.markInterrupted();
    this.abort = new AbortController();
    // Every Microsoft request passes the private-address check where it goes out (issue 14),
    // on the socket (src/http/guarded-fetch.ts); `fetchImpl` (tests) replaces the network.
    const guarded = addressGuardedFetch(this.deps.fetchImpl, {
      allowedHosts: config.allowedHosts,
      allowPrivateNetwork: config.allowPrivateNetwork,
      ...(this.deps.resolve ? { resolve: this.deps.resolve } : {}),
    });
    for (const lane of this.lanes) {
      const { tenant } = lane;
      this.states(tenant).ensure(tenant.sources);
      lane.session = { subscribed: new Set() };
      lane.inbox.reopen();
      // Each tenant its own token (its own client credentials): one tenant's refused secret or
      // slow identity platform answer is never another's.
      const clientFor = (base: URL) => {
        const tokens = new ClientCredentialsTokens(
          {
            loginBaseUrl: config.loginBaseUrl,
            tenantId: tenant.tenantId,
            clientId: tenant.clientId,
            clientSecret: tenant.clientSecret,
            scope: defaultScope(base),
            timeoutMs: config.requestTimeoutMs,
          },
          guarded,
        );
        return new UpstreamClient(base, tokens, config, {}, guarded);
      };
      lane.graph = clientFor(config.graphBaseUrl);
      lane.management = clientFor(config.managementBaseUrl);
    }
    if (!this.lanes.length) {
      // Health still lists the sources, as `not_configured` (the default tenant's rows).
      store.repos().sources.ensure(config.sources);
      log.warn(
        {},
        'audit collection is off: set AUDIT_TENANT_ID, AUDIT_CLIENT_ID and AUDIT_CLIENT_SECRET (or AUDIT_TENANTS) to fetch events',
      );
    }
    if (config.fetchOnStart) this.requestFetch('start');
  }

  /**
   * Queues a fetch of `sources` (default: every configured source) in every tenant's lane that
   * collects them: `queued` when any lane took it.
   */
  requestFetch(reason: FetchReason, sources?: readonly SourceName[]): FetchRequestOutcome {
    if (!this.configured) return 'not_configured';
    const outcomes = this.lanes.map((lane) => this.post(lane, reason, sources ?? lane.tenant.sources));
    if (outcomes.includes('queued')) return 'queued';
    return outcomes.includes('busy') ? 'busy' : 'already_queued';
  }

  private post(lane: TenantLane, reason: FetchReason, sources: readonly SourceName[]): FetchRequestOutcome {
    const fresh = sources.filter((s) => lane.tenant.sources.includes(s) && !lane.waiting.has(s));
    if (!fresh.length) return 'already_queued';
    for (const s of fresh) lane.waiting.add(s);
    if (lane.inbox.post({ reason, sources: fresh })) return 'queued';
    for (const s of fresh) lane.waiting.delete(s);
    return 'busy';
  }

  /** Resolves when every queued fetch of every tenant has run (tests, the admin route's callers). */
  async idle(): Promise<void> {
    await Promise.all(this.lanes.map((l) => l.inbox.idle()));
  }

  private async run(lane: TenantLane, request: FetchRequest): Promise<void> {
    for (const s of request.sources) lane.waiting.delete(s);
    await Promise.all(request.sources.map((s) => this.runSource(lane, s, request.reason)));
  }

  private async runSource(lane: TenantLane, source: SourceName, reason: FetchReason): Promise<void> {
    const { config, store, metrics, log } = this.deps;
    const { tenant } = lane;
    const now = this.deps.now ?? Date.now;
    const startedAt = now();
    const client = isGraphSource(source) ? lane.graph : lane.management;
    if (!client || this.abort.signal.aborted) return;
    lane.running.add(source);
    const hooks = { onRetry: (i: { kind: string }) => this.onRetry(tenant, source, i.kind) };
    const states = () => this.states(tenant);
    const run: SourceRun = {
      source,
      tenant,
      config,
      client: client.withHooks(hooks),
      repos: () => store.repos(),
      states,
      metrics,
      log,
      signal: this.abort.signal,
      now,
      startedAt,
      totals: emptyTotals(),
    };
    let status: 'ok' | 'error' | 'throttled' | 'stopped' = 'ok';
    try {
      states().recordAttempt(source, startedAt);
      if (isGraphSource(source)) await fetchGraphSource({ ...run, source });
      else await fetchManagementSource({ ...run, source }, lane.session);
      const t = run.totals;
      if (t.failedBlobs || t.expiredBlobs) {
        status = 'error';
        const what = [
          t.failedBlobs ? `${t.failedBlobs} content blob(s) failed and will be retried` : '',
          t.expiredBlobs ? `${t.expiredBlobs} content blob(s) expired before a retry succeeded` : '',
        ].filter(Boolean);
        states().recordFailure(source, 'error', what.join('; '));
        states().add(source, { errors: 1 });
      } else {
        states().recordSuccess(source, startedAt);
      }
    } catch (error) {
      status = this.recordFailure(tenant, source, error);
    } finally {
      lane.running.delete(source);
      metrics.runFinished(source, status, (now() - startedAt) / 1000, tenant.name);
      log.info({ tenant: tenant.name, source, reason, status, ...run.totals }, 'audit fetch finished');
    }
  }

  private recordFailure(
    tenant: TenantConfig,
    source: SourceName,
    error: unknown,
  ): 'error' | 'throttled' | 'stopped' {
    const states = () => this.states(tenant);
    if (error instanceof UpstreamError && error.kind === 'aborted') {
      states().recordFailure(source, 'error', 'interrupted: the hub stopped during the run');
      return 'stopped';
    }
    const kind = error instanceof UpstreamError ? error.kind : 'internal';
    const status = kind === 'throttled' ? 'throttled' : 'error';
    // Upstream messages name the request and status only; internal errors stay in the log.
    const message = error instanceof UpstreamError ? error.message : 'internal error (see the hub log)';
    if (!(error instanceof UpstreamError))
      this.deps.log.error({ tenant: tenant.name, source, err: error }, 'audit fetch failed');
    states().recordFailure(source, status, message);
    states().add(source, { errors: 1 });
    this.deps.metrics.fetchFailed(source, kind, tenant.name);
    return status;
  }

  private onRetry(tenant: TenantConfig, source: SourceName, kind: string): void {
    this.deps.metrics.retried(source, kind, tenant.name);
    if (kind === 'throttled') this.states(tenant).add(source, { throttled: 1 });
  }

  override describe(): Record<string, unknown> {
    // A single-tenant hub lists sources as before; several tenants list `tenant/source`.
    const named = (l: TenantLane, s: SourceName) => (this.lanes.length > 1 ? `${l.tenant.name}/${s}` : s);
    return {
      collection: this.configured ? 'on' : 'not_configured',
      fetching: this.lanes.flatMap((l) => [...l.running].map((s) => named(l, s))),
      queued: this.lanes.flatMap((l) => [...l.waiting].map((s) => named(l, s))),
    };
  }

  async stop(): Promise<void> {
    this.abort.abort();
    for (const lane of this.lanes) {
      lane.inbox.close();
      lane.inbox.clear();
      lane.waiting.clear();
    }
    await this.idle();
  }
}
