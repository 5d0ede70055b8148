/**
 * The billing plugin's settings (issue 11), validated with the rest of the hub's at start-up.
 * BTCPAY_URL must be https unless BTCPAY_ALLOW_PRIVATE_NETWORK=true (a BTCPay on the LAN or
 * loopback). The API key and webhook secret are wrapped so they never print.
 */

import { isIP } from 'node:net';
import { z } from 'zod';
import { flag, int, text } from '../config/fields.js';
import { Secret } from '../config/secret.js';
import { checkOutboundUrl, isNonPublicAddress, OutboundUrlError } from '../http/outbound-url.js';
import { cronSetting } from '../kernel/scheduler.js';

export const billingSettings = z
  .object({
    BTCPAY_URL: text.min(1, 'required: the BTCPay Server address, e.g. https://btcpay.example.org'),
    BTCPAY_STORE_ID: text.min(1, 'required: the store id from BTCPay (Store settings → General)'),
    BTCPAY_API_KEY: z.string().min(1, 'required: a Greenfield API key of the store'),
    BTCPAY_WEBHOOK_SECRET: z.string().min(8, 'required: the webhook secret, at least 8 characters'),
    BTCPAY_ALLOW_PRIVATE_NETWORK: flag.default(false),
    BTCPAY_TIMEOUT_MS: int(100, 60_000).default(10_000),
    BILLING_GRACE_HOURS: z.coerce
      .number()
      .min(0)
      .max(24 * 365)
      .default(24),
    BILLING_REDIRECT_URL: text
      .pipe(z.url({ protocol: /^https?$/, error: 'expected an http(s) URL, e.g. https://hub.local/billing' }))
      .optional(),
    BILLING_POLL_CRON: cronSetting.default('*/5 * * * *'),
    BILLING_EXPIRY_CRON: cronSetting.default('* * * * *'),
  })
  .superRefine(
    (parsed, ctx) => {
      const c = parsed as Partial<Record<string, unknown>>;
      if (typeof c.BTCPAY_URL !== 'string') return;
      const lan = c.BTCPAY_ALLOW_PRIVATE_NETWORK === true;
      try {
        const url = checkOutboundUrl(c.BTCPAY_URL, { allowLoopback: lan });
        const host = url.hostname.replace(/^\[|\]$/g, '');
        if (!lan && isIP(host) && isNonPublicAddress(host)) {
          throw new OutboundUrlError('private_address', 'must not point at a private address');
        }
      } catch (error) {
        if (lan && error instanceof OutboundUrlError && error.reason === 'scheme') {
          // On the LAN plain http is the operator's explicit choice.
          if (/^http:\/\/[^/@]+/.test(c.BTCPAY_URL)) return;
        }
        ctx.addIssue({
          code: 'custom',
          path: ['BTCPAY_URL'],
          message:
            error instanceof OutboundUrlError
              ? `${error.message} (set BTCPAY_ALLOW_PRIVATE_NETWORK=true for a BTCPay on the LAN)`
              : 'invalid URL',
        });
      }
    },
    { when: () => true },
  );

export type BillingSettings = z.output<typeof billingSettings>;

export interface BillingConfig {
  baseUrl: URL;
  storeId: string;
  apiKey: Secret;
  webhookSecret: Secret;
  /** BTCPAY_ALLOW_PRIVATE_NETWORK: BTCPay may be on the LAN or loopback (checked at connect time too). */
  allowPrivateNetwork?: boolean;
  timeoutMs: number;
  graceMs: number;
  redirectUrl?: string;
  pollCron: string;
  expiryCron: string;
}

export function billingConfigFrom(s: BillingSettings): BillingConfig {
  const baseUrl = new URL(s.BTCPAY_URL);
  baseUrl.pathname = baseUrl.pathname.replace(/\/+$/, '');
  return {
    baseUrl,
    storeId: s.BTCPAY_STORE_ID,
    apiKey: new Secret(s.BTCPAY_API_KEY),
    webhookSecret: new Secret(s.BTCPAY_WEBHOOK_SECRET),
    allowPrivateNetwork: s.BTCPAY_ALLOW_PRIVATE_NETWORK,
    timeoutMs: s.BTCPAY_TIMEOUT_MS,
    graceMs: Math.round(s.BILLING_GRACE_HOURS * 3_600_000),
    ...(s.BILLING_REDIRECT_URL ? { redirectUrl: s.BILLING_REDIRECT_URL } : {}),
    pollCron: s.BILLING_POLL_CRON,
    expiryCron: s.BILLING_EXPIRY_CRON,
  };
}
