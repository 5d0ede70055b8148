/** The billing plugin's counters in /metrics (`meshhub_billing_…`). */
import type { Counter } from 'prom-client';
import { declareCounters } from '../metrics.js';
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
    const counters = declareCounters((config) => metrics.counter(config), {
      invoices_created_total: ['Invoices created at BTCPay, by kind (purchase, renewal)', ['kind']],
      invoices_settled_total: ['Invoices settled and applied, by kind', ['kind']],
      invoices_expired_total: ['Invoices that ended unpaid, by status (expired, invalid)', ['status']],
      webhook_rejects_total: ['BTCPay webhook deliveries refused, by reason', ['reason']],
    });
    this.invoicesCreated = counters.invoices_created_total;
    this.invoicesSettled = counters.invoices_settled_total;
    this.invoicesExpired = counters.invoices_expired_total;
    this.webhookRejects = counters.webhook_rejects_total;
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
