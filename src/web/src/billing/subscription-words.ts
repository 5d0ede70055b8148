/** A subscription's state in plain words, and which one the chat's bar speaks of. */
import type { BillingPlan, BillingSubscription } from '../api/types.js';
import { t } from '../i18n/index.js';
import { formatDateTime } from '../lib/format.js';
import { ApiError, plainWords } from '../lib/problem.js';

/**
 * An API failure on a billing page in words: for a 502/503/504 the hub answered with problem
 * details, the hub's own reason (its `detail`, else its `title`), e.g. "Payments are unavailable
 * right now: the payment server cannot be reached; try again later." rather than a guess that
 * the hub is busy; everything else as everywhere (plainWords).
 */
export function billingWords(error: unknown): string {
  if (!(error instanceof ApiError) || error.status <= 500 || error.extras.title === undefined) {
    return plainWords(error);
  }
  const reason = (error.detail || error.extras.title).replace(/\.$/, '');
  return `${reason.charAt(0).toUpperCase()}${reason.slice(1)}.`;
}

/** Offer "Renew" this long before the paid period ends. */
export const RENEW_BEFORE_MS = 7 * 24 * 3600_000;

export interface SubscriptionWords {
  text: string;
  tone: 'good' | 'warn' | 'bad' | 'unknown';
}

const endOf = (s: BillingSubscription) => (s.current_period_end ? Date.parse(s.current_period_end) : 0);

export function subscriptionWords(s: BillingSubscription, nowMs = Date.now()): SubscriptionWords {
  const end = s.current_period_end ? formatDateTime(Date.parse(s.current_period_end)) : '';
  // The hub marks an ended period on its next expiry run; until then it has ended all the same.
  if (s.status === 'active' && s.current_period_end && endOf(s) <= nowMs)
    return { text: t('billing.state.endedRenew', { end }), tone: 'warn' };
  switch (s.status) {
    case 'pending_payment':
      if (s.invoice_status === 'processing') return { text: t('billing.state.paymentSeen'), tone: 'warn' };
      if (s.invoice_status === 'expired' || s.invoice_status === 'invalid')
        return { text: t('billing.state.invoiceExpired'), tone: 'bad' };
      return { text: t('billing.state.waitingPayment'), tone: 'warn' };
    case 'active':
      if (s.invoice_status === 'processing')
        return { text: t('billing.state.activeRenewalSeen', { end }), tone: 'good' };
      if (s.invoice_status === 'new')
        return { text: t('billing.state.activeRenewalWaiting', { end }), tone: 'good' };
      return { text: t('billing.state.active', { end }), tone: 'good' };
    case 'past_due':
      return { text: t('billing.state.pastDue', { end }), tone: 'warn' };
    case 'expired':
      return { text: end ? t('billing.state.expiredAt', { end }) : t('billing.state.expired'), tone: 'bad' };
    case 'canceled':
      return { text: t('billing.state.canceled'), tone: 'unknown' };
  }
}

/** Only an absolute http(s) address is followed: the link comes from the payment server, through the hub. */
export function checkoutUrl(link: string | null | undefined): string | undefined {
  if (!link) return undefined;
  try {
    const url = new URL(link);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/** The checkout of the subscription's invoice while it still takes a payment. */
export function openInvoiceLink(s: BillingSubscription): string | undefined {
  const open = s.invoice_status === 'new' || (s.status === 'pending_payment' && !s.invoice_status);
  return open ? checkoutUrl(s.checkout_link) : undefined;
}

/** Renewing is offered in the last week of a period, and after it ended (unless a renewal is being paid). */
export function canRenew(s: BillingSubscription, nowMs: number): boolean {
  if (s.invoice_status === 'new' || s.invoice_status === 'processing') return false;
  if (s.status === 'past_due' || s.status === 'expired') return true;
  return s.status === 'active' && endOf(s) - nowMs <= RENEW_BEFORE_MS;
}

const RANK: Record<BillingSubscription['status'], number> = {
  active: 4,
  past_due: 3,
  pending_payment: 2,
  expired: 1,
  canceled: 0,
};

/** The subscription that matters most now: one that messages (the longest), else one being paid, else the last to end. */
export function currentSubscription(subscriptions: BillingSubscription[]): BillingSubscription | undefined {
  return [...subscriptions].sort((a, b) => RANK[b.status] - RANK[a.status] || endOf(b) - endOf(a))[0];
}

export function planPrice(plan: BillingPlan): string {
  return `${plan.price} ${plan.currency}`;
}

export function planPeriod(plan: BillingPlan): string {
  return t('billing.days', { count: plan.period_days });
}

/** A send refused because the paid subscription lapsed (not because the node is outside it). */
export function isLapsedRefusal(error: ApiError): boolean {
  if (error.status === 403 && typeof error.extras.members?.lapsed_at === 'string') return true;
  if (error.status !== 403) return false;
  return /laps|expired/i.test(error.extras.type ?? '') || /laps|expired|renew/i.test(error.detail);
}
