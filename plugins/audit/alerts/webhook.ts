/**
 * Posts each alert to ALERT_WEBHOOK_URL, after it is stored and outside ingest's path: a bounded
 * queue drained one request at a time, a few attempts with growing delays, then `failed`. The
 * alert row records the outcome (`delivery`), failures are logged and counted; nothing here can
 * lose a stored alert or hold up the writer. Alerts still `pending` when the hub stopped are sent
 * after the next start.
 *
 * Every send passes the outbound check again (src/http/outbound-url.ts): https and the allowlist on
 * the URL, and no host resolving to a private address unless ALERT_ALLOW_PRIVATE_NETWORK=true —
 * checked on the socket, at connect time, by the hub's guarded client (src/http/guarded-fetch.ts),
 * so a name that re-resolves into the LAN is refused too. Redirects are not followed (one could
 * lead into the LAN). With ALERT_WEBHOOK_SECRET the body is signed:
 * `X-Meshhub-Signature: sha256=<hex HMAC-SHA256 of the body>`.
 */
import { type GuardedFetch, guardedFetch } from '../../../src/http/guarded-fetch.js';
import { checkOutboundUrl, OutboundUrlError } from '../../../src/http/outbound-url.js';
import { postWebhook, signBody } from '../../../src/http/webhook-post.js';
import type { KernelLogger } from '../../../src/kernel/actor.js';
import { exponentialDelay } from '../../../src/kernel/backoff.js';
import { pause } from '../../../src/kernel/timing.js';
import type { AlertRepository, AlertRow } from './alert-repository.js';
import { toApiAlert } from './api-json.js';
import type { AlertWebhookConfig } from './settings.js';

export const WEBHOOK_QUEUE_LIMIT = 1_000;

export interface WebhookOptions {
  config: AlertWebhookConfig;
  store: () => AlertRepository;
  log: KernelLogger;
  onOutcome: (outcome: 'delivered' | 'failed' | 'dropped') => void;
  /** Replaces the network (tests' fakes): then only the URL checks apply. */
  fetchImpl?: typeof fetch;
  resolve?: (host: string) => Promise<string[]>;
  /** Delays before the 2nd, 3rd… attempt. */
  retryDelaysMs?: readonly number[];
}

export class AlertWebhook {
  private readonly queue: number[] = [];
  private running: Promise<void> | undefined;
  private abort = new AbortController();
  lastError: string | undefined;
  private readonly network: GuardedFetch | undefined;

  constructor(private readonly options: WebhookOptions) {
    this.network = options.fetchImpl
      ? undefined
      : guardedFetch({
          allowLoopback: true,
          allowPrivateNetwork: options.config.allowPrivateNetwork,
          setting: 'ALERT_ALLOW_PRIVATE_NETWORK',
          ...(options.resolve ? { resolve: options.resolve } : {}),
        });
  }

  start(): void {
    this.abort = new AbortController();
    this.enqueue(this.options.store().pendingDeliveries(WEBHOOK_QUEUE_LIMIT));
  }

  enqueue(alerts: readonly AlertRow[]): void {
    for (const a of alerts) {
      if (this.queue.length >= WEBHOOK_QUEUE_LIMIT) {
        this.options.store().setDelivery(a.id, 'failed');
        this.options.onOutcome('dropped');
        this.options.log.warn({ alert: a.id }, 'alert webhook queue full; alert stored but not sent');
        continue;
      }
      this.queue.push(a.id);
    }
    this.running ??= this.drain().finally(() => {
      this.running = undefined;
    });
  }

  get queued(): number {
    return this.queue.length;
  }

  /** Resolves when the queue is empty (tests). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.queue.length = 0;
    await this.running;
    await this.network?.close();
  }

  private async drain(): Promise<void> {
    let id = this.queue.shift();
    while (id !== undefined && !this.abort.signal.aborted) {
      await this.deliver(id);
      id = this.queue.shift();
    }
  }

  private async deliver(id: number): Promise<void> {
    const store = this.options.store();
    const row = store.alert(id);
    if (row?.delivery !== 'pending') return;
    const delays =
      this.options.retryDelaysMs ??
      Array.from({ length: this.options.config.maxRetries }, (_, i) => exponentialDelay(i, 1_000, 60_000));
    for (let attempt = 0; ; attempt++) {
      try {
        await this.send(toApiAlert(row));
        store.setDelivery(id, 'delivered');
        this.options.onOutcome('delivered');
        return;
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        this.lastError = message;
        const last = attempt >= delays.length || error instanceof OutboundUrlError;
        this.options.log.warn(
          { alert: id, attempt: attempt + 1, err: message, final: last },
          'alert webhook failed',
        );
        if (last || this.abort.signal.aborted) {
          // Stopping mid-retry leaves it pending: the next start sends it.
          if (this.abort.signal.aborted && !last) return;
          store.setDelivery(id, 'failed');
          this.options.onOutcome('failed');
          return;
        }
        await pause(delays[attempt]!, this.abort.signal);
      }
    }
  }

  private async send(alert: unknown): Promise<void> {
    const { config } = this.options;
    const url = checkOutboundUrl(config.url, { allowedHosts: config.allowedHosts });
    const body = JSON.stringify(alert);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'meshhub-alerts',
    };
    if (config.secret) headers['x-meshhub-signature'] = signBody(config.secret.reveal(), body);
    const signal = AbortSignal.any([this.abort.signal, AbortSignal.timeout(config.timeoutMs)]);
    await postWebhook(this.options.fetchImpl ?? this.network!, url, { headers, body, signal });
  }
}
