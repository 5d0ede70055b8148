/** The billing plugin's counters in /metrics (`meshhub_billing_…`). */
import type { Counter } from 'prom-client';
import type { ModuleMetrics } from '../module.js';

export type WebhookRejectReason =
  | 'missing_signature'
  | 'bad_signature'
  | 'too_large'
  | 'not_json'
  | 'bad_payload'
  | 'other_store'
  | 'mismatch'
  | 'unavailable';

export class BillingMetrics {
  readonly invoicesCreated: Counter<'kind'>;
  readonly invoicesSettled: Counter<'kind'>;
  readonly invoicesExpired: Counter<'status'>;
  readonly webhookRejects: Counter<'reason'>;

  /** `metrics`: a hub module's factory, or the upstream's (sync/upstream/billing). */
  constructor(metrics: Pick<ModuleMetrics, 'counter' | 'gauge'>, countPaid: () => number | Promise<number>) {
    this.invoicesCreated = metrics.counter({
      name: 'invoices_created_total',
      help: 'Invoices created at BTCPay, by kind (purchase, renewal)',
      labelNames: ['kind'],
    });
    this.invoicesSettled = metrics.counter({
      name: 'invoices_settled_total',
      help: 'Invoices settled and applied, by kind',
      labelNames: ['kind'],
    });
    this.invoicesExpired = metrics.counter({
      name: 'invoices_expired_total',
      help: 'Invoices that ended unpaid, by status (expired, invalid)',
      labelNames: ['status'],
    });
    this.webhookRejects = metrics.counter({
      name: 'webhook_rejects_total',
      help: 'BTCPay webhook deliveries refused, by reason',
      labelNames: ['reason'],
    });
    metrics.gauge({
      name: 'active_subscriptions',
      help: 'Paid subscriptions that may message now (active or past due within grace)',
      async collect() {
        try {
          this.set(await countPaid());
        } catch {
          // The database not answering leaves the last value rather than failing the scrape.
        }
      },
    });
  }

  reject(reason: WebhookRejectReason): void {
    this.webhookRejects.inc({ reason });
  }
}
