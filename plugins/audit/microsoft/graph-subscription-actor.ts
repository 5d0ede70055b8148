/**
 * Keeps the Microsoft Graph change-notification subscription for the directory alive (issue 14:
 * subscriptions had to be created by hand and were never renewed). When WEBHOOK_PUBLIC_URL is
 * set, the hub creates it —
 *   POST /v1.0/subscriptions { changeType, notificationUrl, resource, expirationDateTime, clientState }
 * (Graph first validates `notificationUrl` by POSTing `?validationToken=…`, which the webhook
 * route answers) — and renews it with `PATCH /v1.0/subscriptions/{id} { expirationDateTime }`
 * when less than half its life is left. Directory resources allow at most 4,230 minutes (under
 * 3 days); we ask for 4,200. A subscription Graph no longer knows (404) is created again. The
 * id and expiry are kept in `audit_state`, so a restart renews instead of piling up new ones.
 * Failures are logged and retried after RETRY_MS; the schedule still fetches meanwhile.
 */
import { Actor, type KernelLogger } from '../../../src/kernel/actor.js';
import type { AuditConfig } from '../settings.js';
import type { AuditStore } from '../store/audit-store.js';
import { apiUrl, type UpstreamClient, UpstreamError } from './upstream.js';

export const SUBSCRIPTION_RESOURCE = 'auditLogs/directoryAudits';
/** Graph's maximum for directory resources is 4,230 minutes; a little less leaves clock skew room. */
export const SUBSCRIPTION_LIFETIME_MS = 4_200 * 60_000;
const RETRY_MS = 5 * 60_000;
const STATE_KEY = 'graph.subscription.directory';
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface StoredSubscription {
  id: string;
  expiresAt: number;
  notificationUrl: string;
}

export class GraphSubscriptionActor extends Actor {
  readonly name = 'audit-graph-subscription';
  override readonly dependsOn = ['store', 'audit-collector'];
  override readonly required = false;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private lastError: string | undefined;

  constructor(
    private readonly deps: {
      config: AuditConfig;
      store: AuditStore;
      client: () => UpstreamClient | undefined;
      log: KernelLogger;
      now?: () => number;
    },
  ) {
    super();
  }

  get notificationUrl(): string | undefined {
    const base = this.deps.config.webhookPublicUrl;
    if (!base) return undefined;
    return `${base.href.replace(/\/+$/, '')}/api/webhooks/directory`;
  }

  /** Whether this hub keeps a subscription at all. */
  get wanted(): boolean {
    const { config } = this.deps;
    return (
      this.notificationUrl !== undefined &&
      config.webhookClientSecret !== undefined &&
      // Issue 29: the first tenant's (AUDIT_TENANTS): its notifications fetch every tenant's directory.
      config.tenants[0]?.sources.includes('directory') === true
    );
  }

  async start(): Promise<void> {
    if (!this.wanted) return;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** Resolves when the current check (if any) is done (tests). */
  idle(): Promise<void> {
    return this.running;
  }

  current(): StoredSubscription | undefined {
    return this.deps.store.repos().state.get<StoredSubscription>(STATE_KEY);
  }

  override describe(): Record<string, unknown> {
    const s = this.current();
    return {
      wanted: this.wanted,
      ...(s ? { subscription: s.id, expires: new Date(s.expiresAt).toISOString() } : {}),
      ...(this.lastError ? { error: this.lastError } : {}),
    };
  }

  /** Creates or renews when due (at `now`); schedules the next check. */
  renewIfDue(now = (this.deps.now ?? Date.now)()): Promise<void> {
    this.running = this.running.then(() => this.check(now));
    return this.running;
  }

  private schedule(delayMs: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.renewIfDue(), Math.max(0, Math.min(delayMs, MAX_TIMER_MS)));
    this.timer.unref();
  }

  private async check(now: number): Promise<void> {
    if (!this.wanted) return;
    const client = this.deps.client();
    if (!client) return;
    const stored = this.current();
    try {
      let next: StoredSubscription;
      if (stored && stored.notificationUrl === this.notificationUrl && stored.expiresAt > now) {
        if (stored.expiresAt - now > SUBSCRIPTION_LIFETIME_MS / 2) {
          this.schedule(stored.expiresAt - SUBSCRIPTION_LIFETIME_MS / 2 - now);
          return;
        }
        next = (await this.renew(client, stored, now)) ?? (await this.create(client, now));
      } else {
        next = await this.create(client, now);
      }
      this.deps.store.repos().state.set(STATE_KEY, next);
      this.lastError = undefined;
      this.deps.log.info(
        { subscription: next.id, expires: new Date(next.expiresAt).toISOString() },
        'the Graph directory subscription is active',
      );
      this.schedule(next.expiresAt - SUBSCRIPTION_LIFETIME_MS / 2 - (this.deps.now ?? Date.now)());
    } catch (error) {
      this.lastError = error instanceof UpstreamError ? error.message : 'internal error (see the log)';
      this.deps.log.warn(
        { err: error instanceof UpstreamError ? undefined : error, reason: this.lastError },
        'the Graph directory subscription could not be created or renewed; retrying later',
      );
      this.schedule(RETRY_MS);
    }
  }

  private async create(client: UpstreamClient, now: number): Promise<StoredSubscription> {
    const { config } = this.deps;
    const expiration = new Date(now + SUBSCRIPTION_LIFETIME_MS).toISOString();
    const { body } = await client.post(apiUrl(config.graphBaseUrl, '/v1.0/subscriptions'), undefined, {
      changeType: 'created',
      notificationUrl: this.notificationUrl,
      resource: SUBSCRIPTION_RESOURCE,
      expirationDateTime: expiration,
      clientState: config.webhookClientSecret!.reveal(),
    });
    return this.read(body);
  }

  /** The renewed subscription, or undefined when Graph no longer knows it. */
  private async renew(
    client: UpstreamClient,
    stored: StoredSubscription,
    now: number,
  ): Promise<StoredSubscription | undefined> {
    const url = apiUrl(this.deps.config.graphBaseUrl, `/v1.0/subscriptions/${encodeURIComponent(stored.id)}`);
    try {
      const { body } = await client.patch(url, {
        expirationDateTime: new Date(now + SUBSCRIPTION_LIFETIME_MS).toISOString(),
      });
      return this.read(body);
    } catch (error) {
      if (error instanceof UpstreamError && error.kind === 'not_found') return undefined;
      throw error;
    }
  }

  private read(body: unknown): StoredSubscription {
    const b = (body ?? {}) as { id?: unknown; expirationDateTime?: unknown };
    const expiresAt =
      typeof b.expirationDateTime === 'string' ? Date.parse(b.expirationDateTime) : Number.NaN;
    if (typeof b.id !== 'string' || !b.id || !Number.isFinite(expiresAt)) {
      throw new UpstreamError('malformed_response', 'Graph answered a subscription without id or expiry');
    }
    return { id: b.id, expiresAt, notificationUrl: this.notificationUrl! };
  }
}
