/**
 * Deliveries of firings, outside the path of the events that caused them: one bounded queue
 * drained one request at a time. Webhooks (generic JSON signed with HMAC-SHA256, ntfy, Apprise API)
 * get a few attempts with growing delays; a Web Push message gets one attempt, and a subscription
 * the push service answers 404 or 410 is dropped (RFC 8030 §7.3: it is gone). Every URL passes
 * the outbound check, and every connection the hub's guarded client (src/http/guarded-fetch.ts).
 */
import type { Secret } from '../config/secret.js';
import { type GuardedFetch, guardedFetch } from '../http/guarded-fetch.js';
import { checkOutboundUrl, OutboundUrlError } from '../http/outbound-url.js';
import { postWebhook, signBody, WebhookError } from '../http/webhook-post.js';
import { exponentialDelay } from '../kernel/backoff.js';
import { pause } from '../kernel/timing.js';
import type { Logger } from '../log.js';
import type { PushMessage, WebhookFormat } from './schemas.js';
import type { PushSubscriptionRow } from './store.js';
import type { VapidKeys } from './vapid.js';

export const DELIVERY_QUEUE_LIMIT = 1_000;

/** What a webhook receives about one firing. */
export interface WebhookEvent {
  firing_id: number;
  rule_id: number | null;
  rule: string;
  kind: string;
  node_id: string;
  subject: string;
  state: 'on' | 'off';
  at: string;
  title: string;
  message: string;
}

export interface WebhookTarget {
  url: URL;
  format: WebhookFormat;
  secret?: Secret | undefined;
}

type Job =
  | { kind: 'webhook'; target: WebhookTarget; event: WebhookEvent }
  | { kind: 'push'; subscription: PushSubscriptionRow; message: PushMessage };

export type DeliveryOutcome = 'delivered' | 'failed' | 'dropped' | 'gone';

export interface DeliveryOptions {
  log: Logger;
  vapid: VapidKeys;
  vapidSubject: string;
  allowedHosts: readonly string[];
  allowPrivateNetwork: boolean;
  timeoutMs: number;
  maxRetries: number;
  onOutcome: (channel: 'webhook' | 'push', outcome: DeliveryOutcome) => void;
  /** A subscription its push service said is gone (404/410). */
  onGone: (endpoint: string) => void;
}

/** An ntfy header: printable ASCII as it is, anything else RFC 2047 encoded (ntfy reads both). */
function headerText(value: string): string {
  return /^[\x20-\x7e]*$/.test(value) ? value : `=?UTF-8?B?${Buffer.from(value).toString('base64')}?=`;
}

/** The request of one webhook delivery in its format. */
export function webhookRequest(
  target: WebhookTarget,
  e: WebhookEvent,
): { headers: Record<string, string>; body: string } {
  const on = e.state === 'on';
  if (target.format === 'ntfy') {
    return {
      headers: {
        'content-type': 'text/plain; charset=utf-8',
        title: headerText(e.title),
        priority: on ? '4' : '3',
        tags: on ? `warning,${e.kind}` : `white_check_mark,${e.kind}`,
      },
      body: e.message,
    };
  }
  if (target.format === 'apprise') {
    return {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ title: e.title, body: e.message, type: on ? 'warning' : 'success' }),
    };
  }
  const body = JSON.stringify(e);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (target.secret) headers['x-meshhub-signature'] = signBody(target.secret.reveal(), body);
  return { headers, body };
}

export class Deliveries {
  private readonly queue: Job[] = [];
  private running: Promise<void> | undefined;
  private readonly abort = new AbortController();
  private readonly webhooks: GuardedFetch;
  private readonly push: GuardedFetch;

  constructor(private readonly options: DeliveryOptions) {
    // Webhooks are the operator's own URLs (loopback allowed, as for audit alerts); push
    // endpoints come from browsers, so loopback is refused too unless the LAN is allowed.
    this.webhooks = guardedFetch({
      allowLoopback: true,
      allowPrivateNetwork: options.allowPrivateNetwork,
      setting: 'NOTIFY_ALLOW_PRIVATE_NETWORK',
    });
    this.push = guardedFetch({
      allowLoopback: options.allowPrivateNetwork,
      allowPrivateNetwork: options.allowPrivateNetwork,
      setting: 'NOTIFY_ALLOW_PRIVATE_NETWORK',
    });
  }

  get queued(): number {
    return this.queue.length;
  }

  webhook(target: WebhookTarget, event: WebhookEvent): void {
    this.enqueue({ kind: 'webhook', target, event });
  }

  pushTo(subscriptions: readonly PushSubscriptionRow[], message: PushMessage): void {
    for (const subscription of subscriptions) this.enqueue({ kind: 'push', subscription, message });
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.queue.length = 0;
    await this.running;
    await Promise.all([this.webhooks.close(), this.push.close()]);
  }

  private enqueue(job: Job): void {
    if (this.abort.signal.aborted) return;
    if (this.queue.length >= DELIVERY_QUEUE_LIMIT) {
      this.options.onOutcome(job.kind, 'dropped');
      this.options.log.warn(
        { channel: job.kind },
        'notification delivery queue full; firing stored but not sent',
      );
      return;
    }
    this.queue.push(job);
    this.running ??= this.drain().finally(() => {
      this.running = undefined;
    });
  }

  private async drain(): Promise<void> {
    for (let job = this.queue.shift(); job && !this.abort.signal.aborted; job = this.queue.shift()) {
      if (job.kind === 'webhook') await this.deliverWebhook(job.target, job.event);
      else await this.deliverPush(job.subscription, job.message);
    }
  }

  private signal(): AbortSignal {
    return AbortSignal.any([this.abort.signal, AbortSignal.timeout(this.options.timeoutMs)]);
  }

  private async deliverWebhook(target: WebhookTarget, event: WebhookEvent): Promise<void> {
    const { log, maxRetries, onOutcome } = this.options;
    for (let attempt = 0; ; attempt++) {
      try {
        const url = checkOutboundUrl(target.url, { allowedHosts: this.options.allowedHosts });
        await postWebhook(this.webhooks, url, { ...webhookRequest(target, event), signal: this.signal() });
        onOutcome('webhook', 'delivered');
        return;
      } catch (error) {
        const final = attempt >= maxRetries || error instanceof OutboundUrlError;
        // The URL's host only: a topic or key in the path is the receiver's secret.
        log.warn(
          {
            host: target.url.host,
            format: target.format,
            attempt: attempt + 1,
            err: (error as Error).message,
            final,
          },
          'notification webhook failed',
        );
        if (final || this.abort.signal.aborted) {
          if (final) onOutcome('webhook', 'failed');
          return;
        }
        await pause(exponentialDelay(attempt, 1_000, 60_000), this.abort.signal);
      }
    }
  }

  private async deliverPush(sub: PushSubscriptionRow, message: PushMessage): Promise<void> {
    const { log, onOutcome, vapid } = this.options;
    try {
      const url = checkOutboundUrl(sub.endpoint, { allowedHosts: this.options.allowedHosts });
      // Loaded on the first push, not at start: most hubs never send one (3 MB of memory).
      const { default: webpush } = await import('web-push');
      const request = webpush.generateRequestDetails(
        { endpoint: sub.endpoint, keys: { p256dh: sub.p256dh, auth: sub.auth } },
        JSON.stringify(message),
        {
          vapidDetails: {
            subject: this.options.vapidSubject,
            publicKey: vapid.publicKey,
            privateKey: vapid.privateKey,
          },
          TTL: 86_400,
          urgency: 'high',
          contentEncoding: 'aes128gcm',
        },
      );
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(request.headers)) headers[k.toLowerCase()] = String(v);
      await postWebhook(this.push, url, { headers, body: request.body as Buffer, signal: this.signal() });
      onOutcome('push', 'delivered');
    } catch (error) {
      const gone = error instanceof WebhookError && (error.status === 404 || error.status === 410);
      if (gone) {
        this.options.onGone(sub.endpoint);
        onOutcome('push', 'gone');
        return;
      }
      log.warn({ host: hostOf(sub.endpoint), err: (error as Error).message }, 'web push failed');
      onOutcome('push', 'failed');
    }
  }
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '(bad url)';
  }
}
