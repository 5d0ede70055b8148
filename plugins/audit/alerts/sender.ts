/**
 * Sends each alert to every configured destination (ALERT_WEBHOOK_URL as signed JSON, Microsoft
 * Teams as an Adaptive Card, Slack as Block Kit: webhook.ts, teams.ts, slack.ts give the body),
 * after it is stored and outside ingest's path. Each destination has its own bounded queue,
 * drained one request at a time, a few attempts with growing delays, then `failed`: a slow or
 * failing receiver never holds up another destination, nor the writer.
 *
 * The outcome per destination is recorded in `audit_alert_deliveries` (the audit-alert-deliveries
 * component's table) and counted (`alert_deliveries_total{destination,outcome}`); the alert's own
 * `delivery` is `pending` until every destination has an outcome, then `delivered`, or `failed`
 * when one of them failed. Alerts still pending when the hub stopped go, after the next start,
 * to the destinations that have no outcome for them yet.
 *
 * Every send passes the outbound check again (src/http/outbound-url.ts): https and the allowlist on
 * the URL, and no host resolving to a private address unless ALERT_ALLOW_PRIVATE_NETWORK=true —
 * checked on the socket, at connect time, by the hub's guarded client (src/http/guarded-fetch.ts),
 * so a name that re-resolves into the LAN is refused too. Redirects are not followed (one could
 * lead into the LAN). A destination's URL is revealed only to send: errors and logs name the
 * destination, never the URL (the Teams and Slack ones carry a token).
 */
import type { Secret } from '../../../src/config/secret.js';
import { type GuardedFetch, guardedFetch } from '../../../src/http/guarded-fetch.js';
import { checkOutboundUrl, OutboundUrlError } from '../../../src/http/outbound-url.js';
import { postWebhook } from '../../../src/http/webhook-post.js';
import type { KernelLogger } from '../../../src/kernel/actor.js';
import { exponentialDelay } from '../../../src/kernel/backoff.js';
import { pause } from '../../../src/kernel/timing.js';
import { migrateComponent } from '../../../src/store/component-migrations.js';
import type { Database, Statement } from '../../../src/store/database.js';
import type { AlertRepository, AlertRow } from './alert-repository.js';
import { toApiAlert } from './api-json.js';
import type { ApiAlert } from './schemas.js';
import type { AlertConfig, AlertDeliveryPolicy, DestinationName } from './settings.js';
import { slackDestination } from './slack.js';
import { teamsDestination } from './teams.js';
import { webhookDestination } from './webhook.js';

export const WEBHOOK_QUEUE_LIMIT = 1_000;

export type DeliveryOutcome = 'delivered' | 'failed' | 'dropped';

/** One place alerts go: its URL (revealed only to send) and the request body of an alert. */
export interface AlertDestination {
  name: DestinationName;
  url: Secret | URL;
  format(alert: ApiAlert): { body: string; headers?: Record<string, string> };
}

/** Tests: the network, DNS and retry delays. */
export interface DeliveryTestOptions {
  /** Replaces the network (tests' fakes): then only the URL checks apply. */
  fetchImpl?: typeof fetch;
  resolve?: (host: string) => Promise<string[]>;
  /** Delays before the 2nd, 3rd… attempt. */
  retryDelaysMs?: readonly number[];
}

const LEDGER_MIGRATIONS = [
  {
    version: 1,
    name: 'alert deliveries per destination',
    up: `
      CREATE TABLE audit_alert_deliveries (
        alert_id INTEGER NOT NULL,
        destination TEXT NOT NULL,
        outcome TEXT NOT NULL,
        at INTEGER NOT NULL,
        PRIMARY KEY (alert_id, destination)
      ) WITHOUT ROWID;
    `,
  },
];

/** The outcome of each alert at each destination, and the alert's `delivery` once all are known. */
class DeliveryLedger {
  private readonly s: Record<'get' | 'put' | 'ofAlert' | 'setDelivery' | 'prune', Statement>;

  constructor(
    readonly db: Database,
    private readonly destinations: readonly DestinationName[],
  ) {
    migrateComponent(db, 'audit-alert-deliveries', LEDGER_MIGRATIONS);
    this.s = {
      get: db.prepare('SELECT outcome FROM audit_alert_deliveries WHERE alert_id = ? AND destination = ?'),
      put: db.prepare(
        `INSERT INTO audit_alert_deliveries (alert_id, destination, outcome, at) VALUES (?, ?, ?, ?)
         ON CONFLICT (alert_id, destination) DO UPDATE SET outcome = excluded.outcome, at = excluded.at`,
      ),
      ofAlert: db.prepare('SELECT destination, outcome FROM audit_alert_deliveries WHERE alert_id = ?'),
      setDelivery: db.prepare("UPDATE audit_alerts SET delivery = ? WHERE id = ? AND delivery = 'pending'"),
      prune: db.prepare(
        'DELETE FROM audit_alert_deliveries WHERE alert_id NOT IN (SELECT id FROM audit_alerts)',
      ),
    };
    // Alerts removed by retention leave nothing behind.
    this.s.prune.run();
  }

  done(alertId: number, destination: DestinationName): boolean {
    return this.s.get.get(alertId, destination) !== undefined;
  }

  record(alertId: number, destination: DestinationName, outcome: 'delivered' | 'failed'): void {
    this.db.transaction(() => {
      this.s.put.run(alertId, destination, outcome, Date.now());
      const known = new Map(
        (this.s.ofAlert.all(alertId) as Array<{ destination: string; outcome: string }>).map((r) => [
          r.destination,
          r.outcome,
        ]),
      );
      if (!this.destinations.every((d) => known.has(d))) return;
      const failed = this.destinations.some((d) => known.get(d) === 'failed');
      this.s.setDelivery.run(failed ? 'failed' : 'delivered', alertId);
    })();
  }
}

interface SenderDeps {
  destination: AlertDestination;
  policy: AlertDeliveryPolicy;
  store: () => AlertRepository;
  ledger: () => DeliveryLedger;
  log: KernelLogger;
  send: (input: URL, init: RequestInit) => Promise<Response>;
  onOutcome: (outcome: DeliveryOutcome) => void;
  retryDelaysMs?: readonly number[];
}

/** One destination's queue: alerts in order, one request at a time, retried, never lost silently. */
export class AlertSender {
  private readonly queue: number[] = [];
  private running: Promise<void> | undefined;
  private abort = new AbortController();
  lastError: string | undefined;

  constructor(private readonly deps: SenderDeps) {}

  get name(): DestinationName {
    return this.deps.destination.name;
  }

  get queued(): number {
    return this.queue.length;
  }

  begin(): void {
    this.abort = new AbortController();
  }

  enqueue(alerts: readonly AlertRow[]): void {
    for (const a of alerts) {
      if (this.queue.length >= WEBHOOK_QUEUE_LIMIT) {
        this.deps.ledger().record(a.id, this.name, 'failed');
        this.deps.onOutcome('dropped');
        this.deps.log.warn(
          { alert: a.id, destination: this.name },
          'alert delivery queue full; alert stored but not sent',
        );
        continue;
      }
      this.queue.push(a.id);
    }
    this.running ??= this.drain().finally(() => {
      this.running = undefined;
    });
  }

  /** Resolves when the queue is empty (tests). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.queue.length = 0;
    await this.running;
  }

  private async drain(): Promise<void> {
    let id = this.queue.shift();
    while (id !== undefined && !this.abort.signal.aborted) {
      await this.deliver(id);
      id = this.queue.shift();
    }
  }

  private async deliver(id: number): Promise<void> {
    const row = this.deps.store().alert(id);
    const ledger = this.deps.ledger();
    if (row?.delivery !== 'pending' || ledger.done(id, this.name)) return;
    const { policy } = this.deps;
    const delays =
      this.deps.retryDelaysMs ??
      Array.from({ length: policy.maxRetries }, (_, i) => exponentialDelay(i, 1_000, 60_000));
    for (let attempt = 0; ; attempt++) {
      try {
        await this.send(toApiAlert(row));
        ledger.record(id, this.name, 'delivered');
        this.deps.onOutcome('delivered');
        return;
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        this.lastError = message;
        const last = attempt >= delays.length || error instanceof OutboundUrlError;
        this.deps.log.warn(
          { alert: id, destination: this.name, attempt: attempt + 1, err: message, final: last },
          'alert delivery failed',
        );
        // Stopping (mid-request or mid-retry) leaves it pending: the next start sends it.
        if (this.abort.signal.aborted) return;
        if (last) {
          ledger.record(id, this.name, 'failed');
          this.deps.onOutcome('failed');
          return;
        }
        await pause(delays[attempt]!, this.abort.signal);
      }
    }
  }

  private async send(alert: ApiAlert): Promise<void> {
    const { destination, policy } = this.deps;
    const raw = destination.url instanceof URL ? destination.url.href : destination.url.reveal();
    const url = checkOutboundUrl(raw, { allowedHosts: policy.allowedHosts });
    const message = destination.format(alert);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'meshhub-alerts',
      ...message.headers,
    };
    const signal = AbortSignal.any([this.abort.signal, AbortSignal.timeout(policy.timeoutMs)]);
    await postWebhook(this.deps.send, url, { headers, body: message.body, signal });
  }
}

/** Every configured destination of ALERT_*: what the alert actor hands each new alert to. */
export class AlertDelivery {
  readonly senders: AlertSender[];
  private readonly network: GuardedFetch | undefined;
  private ledger: DeliveryLedger | undefined;

  constructor(
    private readonly options: {
      config: AlertConfig;
      store: () => AlertRepository;
      log: KernelLogger;
      onOutcome: (destination: DestinationName, outcome: DeliveryOutcome) => void;
    } & DeliveryTestOptions,
  ) {
    const { config } = options;
    const destinations = [
      ...(config.webhook ? [webhookDestination(config.webhook)] : []),
      ...(config.teams ? [teamsDestination(config.teams, config.consoleUrl)] : []),
      ...(config.slack ? [slackDestination(config.slack, config.consoleUrl)] : []),
    ];
    this.network =
      options.fetchImpl || !destinations.length
        ? undefined
        : guardedFetch({
            allowLoopback: true,
            allowPrivateNetwork: config.delivery.allowPrivateNetwork,
            setting: 'ALERT_ALLOW_PRIVATE_NETWORK',
            ...(options.resolve ? { resolve: options.resolve } : {}),
          });
    const send = options.fetchImpl ?? this.network!;
    this.senders = destinations.map(
      (destination) =>
        new AlertSender({
          destination,
          policy: config.delivery,
          store: options.store,
          ledger: () => this.ledgerOn(options.store().db),
          log: options.log,
          send,
          onOutcome: (outcome) => options.onOutcome(destination.name, outcome),
          ...(options.retryDelaysMs ? { retryDelaysMs: options.retryDelaysMs } : {}),
        }),
    );
  }

  /** Some destination is configured: new alerts start `pending`. */
  get configured(): boolean {
    return this.senders.length > 0;
  }

  sender(name: DestinationName): AlertSender | undefined {
    return this.senders.find((s) => s.name === name);
  }

  start(): void {
    if (!this.configured) return;
    const pending = this.options.store().pendingDeliveries(WEBHOOK_QUEUE_LIMIT);
    const ledger = this.ledgerOn(this.options.store().db);
    for (const sender of this.senders) {
      sender.begin();
      sender.enqueue(pending.filter((a) => !ledger.done(a.id, sender.name)));
    }
  }

  enqueue(alerts: readonly AlertRow[]): void {
    for (const sender of this.senders) sender.enqueue(alerts);
  }

  /** Resolves when every queue is empty (tests). */
  async idle(): Promise<void> {
    await Promise.all(this.senders.map((s) => s.idle()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.senders.map((s) => s.stop()));
    await this.network?.close();
  }

  private ledgerOn(db: Database): DeliveryLedger {
    if (this.ledger?.db !== db)
      this.ledger = new DeliveryLedger(
        db,
        this.senders.map((s) => s.name),
      );
    return this.ledger;
  }
}
