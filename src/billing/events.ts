/** The billing feature's event, merged into the hub's event map (src/domain/events.ts). */

/** One stored state change of a paid subscription (`from === to` for invoice-only news: payment seen). */
export interface BillingChange {
  subscriptionId: string;
  subscriber: string;
  planId: string;
  from: string | null;
  to: string;
  /** Why, in words: `invoice settled`, `period ended`, `payment seen, waiting for confirmation`. */
  cause: string;
  invoiceId: string | null;
  /** ms since the epoch. */
  at: number;
  currentPeriodEnd: number | null;
}

declare module '../domain/events.js' {
  interface HubEvents {
    /** A billing subscription changed state (the billing plugin, issue 11), after commit. */
    'billing.changed': BillingChange;
  }
}
