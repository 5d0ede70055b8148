/**
 * The signed-in subscriber's plans and subscriptions (`/api/v1/billing`, issue 11). Loaded only
 * by the pages that show them (plans, the chat's subscription bar), so the map's first visit
 * carries none of it. While a payment is open the list is fetched again every few seconds: the
 * hub learns of it from BTCPay's webhook, and the page should say so without a reload.
 */
import { getJson, request } from '../api/client.js';
import type { BillingPlan, BillingSubscription } from '../api/types.js';
import type { ApiError } from '../lib/problem.js';
import { createStore } from '../lib/store.js';
import { currentToken } from '../state/session.js';
import { checkoutUrl } from './subscription-words.js';

export interface BillingState {
  plans: BillingPlan[];
  plansLoaded: boolean;
  plansError?: ApiError;
  subscriptions: BillingSubscription[];
  subscriptionsLoaded: boolean;
  subscriptionsError?: ApiError;
  /** The token the subscriptions belong to (another sign-in starts empty). */
  token?: string;
}

const EMPTY: BillingState = { plans: [], plansLoaded: false, subscriptions: [], subscriptionsLoaded: false };
export const billingStore = createStore<BillingState>(EMPTY);

const PAYMENT_POLL_MS = 5_000;

function auth() {
  const token = currentToken();
  return token ? { token } : {};
}

export async function loadPlans(): Promise<void> {
  try {
    const { data } = await getJson<{ data: BillingPlan[] }>('/api/v1/billing/plans');
    billingStore.set((s) => ({ ...s, plans: data, plansLoaded: true, plansError: undefined }));
  } catch (error) {
    billingStore.set((s) => ({ ...s, plansError: error as ApiError }));
  }
}

export async function loadMySubscriptions(): Promise<void> {
  const token = currentToken();
  if (!token) return;
  if (billingStore.get().token !== token) {
    billingStore.set((s) => ({ ...s, subscriptions: [], subscriptionsLoaded: false, token }));
  }
  try {
    const { data } = await getJson<{ data: BillingSubscription[] }>('/api/v1/billing/subscriptions', {
      token,
    });
    billingStore.set((s) =>
      s.token === token
        ? { ...s, subscriptions: data, subscriptionsLoaded: true, subscriptionsError: undefined }
        : s,
    );
  } catch (error) {
    billingStore.set((s) => (s.token === token ? { ...s, subscriptionsError: error as ApiError } : s));
  }
}

function merge(subscription: BillingSubscription): void {
  billingStore.set((s) => ({
    ...s,
    subscriptions: [subscription, ...s.subscriptions.filter((x) => x.id !== subscription.id)],
  }));
}

/**
 * Goes to BTCPay's checkout in this tab: a window opened after the hub's answer would be blocked
 * as a pop-up on phones. BTCPay's "return" button comes back here (BILLING_REDIRECT_URL), and the
 * sign-in survives the trip (sessionStorage belongs to the tab).
 */
export function openCheckout(link: string | null | undefined): boolean {
  const url = checkoutUrl(link);
  if (!url) return false;
  location.assign(url);
  return true;
}

/** `POST /api/v1/billing/subscriptions`: a new subscription waiting for its first payment. */
export async function buyPlan(planId: string): Promise<BillingSubscription> {
  const { body } = await request<BillingSubscription>('/api/v1/billing/subscriptions', {
    method: 'POST',
    body: { plan_id: planId },
    ...auth(),
  });
  merge(body);
  return body;
}

/** `POST /api/v1/billing/subscriptions/{id}/renew`: an invoice for the next period. */
export async function renewSubscription(id: string): Promise<string | undefined> {
  const { body } = await request<Partial<BillingSubscription>>(
    `/api/v1/billing/subscriptions/${encodeURIComponent(id)}/renew`,
    { method: 'POST', ...auth() },
  );
  if (body && typeof body.id === 'string' && typeof body.status === 'string')
    merge(body as BillingSubscription);
  return body?.checkout_link ?? undefined;
}

/** A payment is open: the hub has not heard the end of an invoice yet. */
export function awaitingPayment(subscriptions: BillingSubscription[]): boolean {
  return subscriptions.some(
    (s) =>
      (s.status === 'pending_payment' && s.invoice_status !== 'expired' && s.invoice_status !== 'invalid') ||
      s.invoice_status === 'new' ||
      s.invoice_status === 'processing',
  );
}

/** Fetches the subscriptions now, and again every few seconds while a payment is open. */
export function followSubscriptions(): () => void {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = async () => {
    await loadMySubscriptions();
    if (stopped) return;
    if (awaitingPayment(billingStore.get().subscriptions)) timer = setTimeout(tick, PAYMENT_POLL_MS);
  };
  void tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
