/**
 * Settings of the alert rules (issue 14), spread into the audit plugin's one settings schema so
 * every problem is reported at start-up with the others. ALERTS_ENABLED itself is in ../settings.ts.
 *
 * ALERT_WEBHOOK_URL passes src/http/outbound-url.ts as the other outbound URLs do: https (plain
 * http only to loopback), no credentials in it, ALERT_ALLOWED_HOSTS when set; and at every send,
 * the host must not resolve to a private address unless ALERT_ALLOW_PRIVATE_NETWORK=true.
 */
import { z } from 'zod';
import { flag, int, list, text } from '../../../src/config/fields.js';
import { Secret } from '../../../src/config/secret.js';
import { checkOutboundUrl, OutboundUrlError } from '../../../src/http/outbound-url.js';
import { isTimeZone } from './condition.js';

export const alertSettingsShape = {
  ALERT_WEBHOOK_URL: text.min(1).optional(),
  ALERT_WEBHOOK_SECRET: z.string().min(16, 'must be at least 16 characters').max(256).optional(),
  ALERT_ALLOWED_HOSTS: list.default([]),
  ALERT_ALLOW_PRIVATE_NETWORK: flag.default(false),
  ALERT_WEBHOOK_TIMEOUT_MS: int(100, 120_000).default(10_000),
  ALERT_WEBHOOK_MAX_RETRIES: int(0, 10).default(3),
  ALERT_TIME_ZONE: text
    .refine(isTimeZone, 'expected an IANA time zone such as UTC or Europe/Berlin')
    .default('UTC'),
};

/** Checks spanning alert settings; `c` may hold anything (other settings may be invalid). */
export function refineAlertSettings(c: Partial<Record<string, unknown>>, ctx: z.RefinementCtx): void {
  const url = c.ALERT_WEBHOOK_URL;
  if (typeof url !== 'string') return;
  try {
    checkOutboundUrl(url, {
      allowedHosts: Array.isArray(c.ALERT_ALLOWED_HOSTS) ? (c.ALERT_ALLOWED_HOSTS as string[]) : [],
    });
  } catch (error) {
    ctx.addIssue({
      code: 'custom',
      path: ['ALERT_WEBHOOK_URL'],
      message: error instanceof OutboundUrlError ? error.message : 'invalid URL',
    });
  }
}

export interface AlertWebhookConfig {
  url: URL;
  secret?: Secret;
  allowedHosts: string[];
  allowPrivateNetwork: boolean;
  timeoutMs: number;
  /** Attempts after the first, 1 s, 2 s, 4 s… apart (at most a minute). */
  maxRetries: number;
}

export interface AlertConfig {
  timeZone: string;
  webhook?: AlertWebhookConfig;
}

const alertSettings = z.object(alertSettingsShape);
type AlertSettings = z.output<typeof alertSettings>;

export function alertConfigFrom(c: AlertSettings): AlertConfig {
  return {
    timeZone: c.ALERT_TIME_ZONE,
    ...(c.ALERT_WEBHOOK_URL
      ? {
          webhook: {
            url: new URL(c.ALERT_WEBHOOK_URL),
            ...(c.ALERT_WEBHOOK_SECRET ? { secret: new Secret(c.ALERT_WEBHOOK_SECRET) } : {}),
            allowedHosts: c.ALERT_ALLOWED_HOSTS,
            allowPrivateNetwork: c.ALERT_ALLOW_PRIVATE_NETWORK,
            timeoutMs: c.ALERT_WEBHOOK_TIMEOUT_MS,
            maxRetries: c.ALERT_WEBHOOK_MAX_RETRIES,
          },
        }
      : {}),
  };
}
