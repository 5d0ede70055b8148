/**
 * The audit collector: fetches every configured source on AUDIT_FETCH_CRON, on an admin's request
 * (`POST /api/fetch`) and early when the directory webhook says something changed.
 *
 * Fetch requests wait in a bounded mailbox (overflow: reject — they are commands) and run one
 * at a time; sources within a request are fetched side by side. A request for a source that is
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

export type FetchReason = 'start' | 'schedule' | 'admin' | 'webhook';

export interface FetchRequest {
  reason: FetchReason;
  sources: SourceName[];
}

export type FetchRequestOutcome = 'queued' | 'already_queued' | 'not_configured' | 'busy';

export class AuditCollectorActor extends Actor {
  readonly name = 'audit-collector';
  override readonly dependsOn = ['store'];
  override readonly required = false;

  private readonly inbox: Mailbox<FetchRequest>;
  private readonly waiting = new Set<SourceName>();
  private readonly running = new Set<SourceName>();
  private abort = new AbortController();
  private graph: UpstreamClient | undefined;
  private management: UpstreamClient | undefined;
  private session: ManagementSession = { subscribed: new Set() };

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
    this.inbox = this.createMailbox<FetchRequest>('fetch', {
      capacity: 16,
      overflow: 'reject',
      handle: (request) => this.run(request),
    });
  }

  /** The Graph client, once started with credentials (the subscription actor shares its token). */
  get graphClient(): UpstreamClient | undefined {
    return this.graph;
  }

  get configured(): boolean {
    return this.deps.config.credentials !== undefined;
  }

  async start(): Promise<void> {
    const { config, store, log } = this.deps;
    const states = store.repos().sources;
    states.ensure(config.sources);
    states.markInterrupted();
    this.abort = new AbortController();
    this.session = { subscribed: new Set() };
    this.inbox.reopen();
    if (config.credentials) {
      // Every Microsoft request passes the private-address check where it goes out (issue 14),
      // on the socket (src/http/guarded-fetch.ts); `fetchImpl` (tests) replaces the network.
      const guarded = addressGuardedFetch(this.deps.fetchImpl, {
        allowedHosts: config.allowedHosts,
        allowPrivateNetwork: config.allowPrivateNetwork,
        ...(this.deps.resolve ? { resolve: this.deps.resolve } : {}),
      });
      const clientFor = (base: URL) => {
        const tokens = new ClientCredentialsTokens(
          {
            loginBaseUrl: config.loginBaseUrl,
            tenantId: config.credentials!.tenantId,
            clientId: config.credentials!.clientId,
            clientSecret: config.credentials!.clientSecret,
            scope: defaultScope(base),
            timeoutMs: config.requestTimeoutMs,
          },
          guarded,
        );
        return new UpstreamClient(base, tokens, config, {}, guarded);
      };
      this.graph = clientFor(config.graphBaseUrl);
      this.management = clientFor(config.managementBaseUrl);
    } else {
      log.warn(
        {},
        'audit collection is off: set AUDIT_TENANT_ID, AUDIT_CLIENT_ID and AUDIT_CLIENT_SECRET to fetch events',
      );
    }
    if (config.fetchOnStart) this.requestFetch('start');
  }

  /** Queues a fetch of `sources` (default: every configured source). */
  requestFetch(
    reason: FetchReason,
    sources: readonly SourceName[] = this.deps.config.sources,
  ): FetchRequestOutcome {
    if (!this.configured) return 'not_configured';
    const fresh = sources.filter((s) => this.deps.config.sources.includes(s) && !this.waiting.has(s));
    if (!fresh.length) return 'already_queued';
    for (const s of fresh) this.waiting.add(s);
    if (this.inbox.post({ reason, sources: fresh })) return 'queued';
    for (const s of fresh) this.waiting.delete(s);
    return 'busy';
  }

  /** Resolves when every queued fetch has run (tests, the admin route's callers). */
  idle(): Promise<void> {
    return this.inbox.idle();
  }

  private async run(request: FetchRequest): Promise<void> {
    for (const s of request.sources) this.waiting.delete(s);
    await Promise.all(request.sources.map((s) => this.runSource(s, request.reason)));
  }

  private async runSource(source: SourceName, reason: FetchReason): Promise<void> {
    const { config, store, metrics, log } = this.deps;
    const now = this.deps.now ?? Date.now;
    const startedAt = now();
    const client = isGraphSource(source) ? this.graph : this.management;
    if (!client || this.abort.signal.aborted) return;
    this.running.add(source);
    const hooks = { onRetry: (i: { kind: string }) => this.onRetry(source, i.kind) };
    const run: SourceRun = {
      source,
      config,
      client: client.withHooks(hooks),
      repos: () => store.repos(),
      metrics,
      log,
      signal: this.abort.signal,
      now,
      startedAt,
      totals: emptyTotals(),
    };
    let status: 'ok' | 'error' | 'throttled' | 'stopped' = 'ok';
    try {
      store.repos().sources.recordAttempt(source, startedAt);
      if (isGraphSource(source)) await fetchGraphSource({ ...run, source });
      else await fetchManagementSource({ ...run, source }, this.session);
      const t = run.totals;
      if (t.failedBlobs || t.expiredBlobs) {
        status = 'error';
        const what = [
          t.failedBlobs ? `${t.failedBlobs} content blob(s) failed and will be retried` : '',
          t.expiredBlobs ? `${t.expiredBlobs} content blob(s) expired before a retry succeeded` : '',
        ].filter(Boolean);
        store.repos().sources.recordFailure(source, 'error', what.join('; '));
        store.repos().sources.add(source, { errors: 1 });
      } else {
        store.repos().sources.recordSuccess(source, startedAt);
      }
    } catch (error) {
      status = this.recordFailure(source, error);
    } finally {
      this.running.delete(source);
      metrics.runFinished(source, status, (now() - startedAt) / 1000);
      log.info({ source, reason, status, ...run.totals }, 'audit fetch finished');
    }
  }

  private recordFailure(source: SourceName, error: unknown): 'error' | 'throttled' | 'stopped' {
    const states = () => this.deps.store.repos().sources;
    if (error instanceof UpstreamError && error.kind === 'aborted') {
      states().recordFailure(source, 'error', 'interrupted: the hub stopped during the run');
      return 'stopped';
    }
    const kind = error instanceof UpstreamError ? error.kind : 'internal';
    const status = kind === 'throttled' ? 'throttled' : 'error';
    // Upstream messages name the request and status only; internal errors stay in the log.
    const message = error instanceof UpstreamError ? error.message : 'internal error (see the hub log)';
    if (!(error instanceof UpstreamError)) this.deps.log.error({ source, err: error }, 'audit fetch failed');
    states().recordFailure(source, status, message);
    states().add(source, { errors: 1 });
    this.deps.metrics.fetchFailed(source, kind);
    return status;
  }

  private onRetry(source: SourceName, kind: string): void {
    this.deps.metrics.retried(source, kind);
    if (kind === 'throttled') this.deps.store.repos().sources.add(source, { throttled: 1 });
  }

  override describe(): Record<string, unknown> {
    return {
      collection: this.configured ? 'on' : 'not_configured',
      fetching: [...this.running],
      queued: [...this.waiting],
    };
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.inbox.close();
    this.inbox.clear();
    this.waiting.clear();
    await this.inbox.idle();
  }
}
