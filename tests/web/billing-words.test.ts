/** What the billing pages say about a subscription, and which refusals offer a renewal. */
import { describe, expect, it } from 'vitest';
import type { BillingSubscription } from '../../src/web/src/api/types.js';
import {
  canRenew,
  checkoutUrl,
  currentSubscription,
  isLapsedRefusal,
  openInvoiceLink,
  subscriptionWords,
} from '../../src/web/src/billing/subscription-words.js';
import { tokenRoles } from '../../src/web/src/lib/jwt.js';
import { apiErrorFrom } from '../../src/web/src/lib/problem.js';

const NOW = Date.UTC(2026, 10, 21, 12);
const DAY = 86_400_000;

function sub(over: Partial<BillingSubscription>): BillingSubscription {
  return {
    id: 'sub_0123456789abcdef',
    plan_id: 'month',
    subscriber: 'ana',
    status: 'active',
    invoice_id: 'inv1',
    invoice_status: 'settled',
    checkout_link: 'https://pay.example.org/i/inv1',
    payment_note: null,
    current_period_end: new Date(NOW + 20 * DAY).toISOString(),
    created_at: new Date(NOW - 10 * DAY).toISOString(),
    ...over,
  };
}

describe('a subscription in words', () => {
  it('follows a payment from the invoice to the paid period', () => {
    const pending = { status: 'pending_payment', current_period_end: null } as const;
    expect(subscriptionWords(sub({ ...pending, invoice_status: 'new' }), NOW).text).toBe(
      'Waiting for payment',
    );
    expect(subscriptionWords(sub({ ...pending, invoice_status: 'processing' }), NOW).text).toBe(
      'Payment seen, waiting for confirmation',
    );
    expect(subscriptionWords(sub({ ...pending, invoice_status: 'expired' }), NOW)).toEqual({
      text: 'Not paid: the invoice expired',
      tone: 'bad',
    });
    expect(subscriptionWords(sub({}), NOW)).toMatchObject({
      text: expect.stringMatching(/^Active until /),
      tone: 'good',
    });
    expect(subscriptionWords(sub({ invoice_status: 'new' }), NOW).text).toMatch(
      /· renewal waiting for payment$/,
    );
  });

  it('says a period ended even before the hub marks it', () => {
    const ended = sub({ current_period_end: new Date(NOW - DAY).toISOString() });
    expect(subscriptionWords(ended, NOW)).toMatchObject({
      text: expect.stringMatching(/^Ended .+: renew to keep messaging$/),
      tone: 'warn',
    });
    expect(subscriptionWords(sub({ status: 'expired' }), NOW).tone).toBe('bad');
    expect(subscriptionWords(sub({ status: 'canceled' }), NOW).text).toBe('Canceled');
  });

  it('offers Renew in the last week and after the end, not while a renewal is being paid', () => {
    expect(canRenew(sub({}), NOW)).toBe(false);
    expect(canRenew(sub({ current_period_end: new Date(NOW + 6 * DAY).toISOString() }), NOW)).toBe(true);
    expect(canRenew(sub({ status: 'past_due' }), NOW)).toBe(true);
    expect(canRenew(sub({ status: 'expired' }), NOW)).toBe(true);
    expect(canRenew(sub({ status: 'expired', invoice_status: 'new' }), NOW)).toBe(false);
    expect(canRenew(sub({ status: 'pending_payment', current_period_end: null }), NOW)).toBe(false);
    expect(canRenew(sub({ status: 'canceled' }), NOW)).toBe(false);
  });

  it('picks the subscription that messages, else the one being paid, else the last to end', () => {
    const expired = sub({ id: 'a', status: 'expired' });
    const pending = sub({ id: 'b', status: 'pending_payment', current_period_end: null });
    const active = sub({ id: 'c' });
    expect(currentSubscription([expired, pending, active])?.id).toBe('c');
    expect(currentSubscription([expired, pending])?.id).toBe('b');
    expect(currentSubscription([expired])?.id).toBe('a');
    expect(currentSubscription([])).toBeUndefined();
  });

  it('links only an open invoice, and only over http(s)', () => {
    expect(openInvoiceLink(sub({ invoice_status: 'new' }))).toBe('https://pay.example.org/i/inv1');
    expect(openInvoiceLink(sub({}))).toBeUndefined();
    expect(
      openInvoiceLink(sub({ invoice_status: 'new', checkout_link: 'javascript:alert(1)' })),
    ).toBeUndefined();
    expect(checkoutUrl('http://127.0.0.1:4000/i/x')).toBe('http://127.0.0.1:4000/i/x');
    expect(checkoutUrl('data:text/html,hi')).toBeUndefined();
    expect(checkoutUrl(null)).toBeUndefined();
  });
});

describe('refusals and roles', () => {
  it('tells a lapsed subscription from a node outside it', () => {
    const lapsed = apiErrorFrom(
      403,
      {
        type: 'urn:meshhub:problem:subscription-lapsed',
        title: 'Forbidden',
        status: 403,
        detail: 'your subscription lapsed at 2026-11-20T12:00:00.000Z; renew it with POST …',
        lapsed_at: '2026-11-20T12:00:00.000Z',
        billing_subscription_id: 'sub_0123456789abcdef',
      },
      undefined,
    );
    expect(isLapsedRefusal(lapsed)).toBe(true);
    expect(lapsed.extras.type).toBe('urn:meshhub:problem:subscription-lapsed');
    expect(lapsed.extras.members).toEqual({
      lapsed_at: '2026-11-20T12:00:00.000Z',
      billing_subscription_id: 'sub_0123456789abcdef',
    });
    const outside = apiErrorFrom(
      403,
      { type: 'about:blank', detail: 'your subscription does not allow messaging !a1b2c3d4' },
      undefined,
    );
    expect(isLapsedRefusal(outside)).toBe(false);
    expect(outside.extras.type).toBeUndefined();
    expect(isLapsedRefusal(apiErrorFrom(404, lapsed, undefined))).toBe(false);
  });

  it('reads the roles a token carries', () => {
    const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
    expect(tokenRoles(`${part({})}.${part({ roles: ['subscriber', 'admin', 3] })}.sig`)).toEqual([
      'subscriber',
      'admin',
    ]);
    expect(tokenRoles(`${part({})}.${part({ sub: 'x' })}.sig`)).toEqual([]);
    expect(tokenRoles('garbage')).toEqual([]);
  });
});
