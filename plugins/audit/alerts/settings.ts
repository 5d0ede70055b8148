/**
 * Settings of the alert rules (issue 14), spread into the audit plugin's one settings schema so
 * every problem is reported at start-up with the others. ALERTS_ENABLED itself is in ../settings.ts.
 *
 * ALERT_WEBHOOK_URL passes src/http/outbound-url.ts as the other outbound URLs do: https (plain
 * http only to loopback), no credentials in it, ALERT_ALLOWED_HOSTS when set; and at every send,
 * the host must not resolve to a private address unless ALERT_ALLOW_PRIVATE_NETWORK=true.
 *
 * ALERT_TEAMS_WEBHOOK_URL and ALERT_SLACK_WEBHOOK_URL (issue 29) pass the same checks; their path
 * carries the receiver's token, so they are kept as Secrets: never logged, never in /health, the
 * features report or a start-up error. ALERT_CONSOLE_URL, the console's address as people open it,
 * adds a link to the event to each message; without it there is no link.
 */
import { z } from 'zod';
import { flag, int, list, text } from '../../../src/config/fields.js';
import { Secret } from '../../../src/config/secret.js';
import { checkOutboundSetting } from '../outbound-setting.js';
import { isTimeZone } from './condition.js';

export const alertSettingsShape = {
  ALERT_WEBHOOK_URL: text.min(1).optional(),
  ALERT_WEBHOOK_SECRET: z.string().min(16, 'must be at least 16 characters').max(256).optional(),
  ALERT_ALLOWED_HOSTS: list.default([]),
  ALERT_ALLOW_PRIVATE_NETWORK: flag.default(false),
  ALERT_TEAMS_WEBHOOK_URL: text.min(1).optional(),
  ALERT_SLACK_WEBHOOK_URL: text.min(1).optional(),
  ALERT_CONSOLE_URL: text.min(1).optional(),
  ALERT_WEBHOOK_TIMEOUT_MS: int(100, 120_000).default(10_000),
  ALERT_WEBHOOK_MAX_RETRIES: int(0, 10).default(3),
  ALERT_TIME_ZONE: text
    .refine(isTimeZone, 'expected an IANA time zone such as UTC or Europe/Berlin')
    .default('UTC'),
};

/** The settings naming where alerts go, by destination. */
export const DESTINATION_SETTINGS = {
  webhook: 'ALERT_WEBHOOK_URL',
  teams: 'ALERT_TEAMS_WEBHOOK_URL',
  slack: 'ALERT_SLACK_WEBHOOK_URL',
} as const;
export type DestinationName = keyof typeof DESTINATION_SETTINGS;

/** Checks spanning alert settings; `c` may hold anything (other settings may be invalid). */
export function refineAlertSettings(c: Partial<Record<string, unknown>>, ctx: z.RefinementCtx): void {
  const allowedHosts = Array.isArray(c.ALERT_ALLOWED_HOSTS) ? (c.ALERT_ALLOWED_HOSTS as string[]) : [];
  for (const setting of Object.values(DESTINATION_SETTINGS))
    checkOutboundSetting(c, setting, allowedHosts, ctx);
  const consoleUrl = c.ALERT_CONSOLE_URL;
  if (typeof consoleUrl === 'string' && !isWebAddress(consoleUrl)) {
    ctx.addIssue({
      code: 'custom',
      path: ['ALERT_CONSOLE_URL'],
      message: 'expected the console’s http(s) address as people open it, e.g. https://hub.example.org',
    });
  }
}

function isWebAddress(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'https:' || url.protocol === 'http:') && !url.username && !url.password;
  } catch {
    return false;
  }
}

/** What every destination shares: the network policy, the time limit and the retries. */
export interface AlertDeliveryPolicy {
  allowedHosts: string[];
  allowPrivateNetwork: boolean;
  timeoutMs: number;
  /** Attempts after the first, 1 s, 2 s, 4 s… apart (at most a minute). */
  maxRetries: number;
}

export interface AlertWebhookConfig extends AlertDeliveryPolicy {
  url: URL;
  secret?: Secret;
}

export interface AlertConfig {
  timeZone: string;
  webhook?: AlertWebhookConfig;
  /** ALERT_TEAMS_WEBHOOK_URL: a secret (its path holds the token). */
  teams?: Secret;
  /** ALERT_SLACK_WEBHOOK_URL: a secret (its path holds the token). */
  slack?: Secret;
  /** ALERT_CONSOLE_URL without a trailing slash: messages link to `<it>/audit?event=<id>`. */
  consoleUrl?: string;
  /** The policy of every destination (also in `webhook`). */
  delivery: AlertDeliveryPolicy;
}

const alertSettings = z.object(alertSettingsShape);
type AlertSettings = z.output<typeof alertSettings>;

export function alertConfigFrom(c: AlertSettings): AlertConfig {
  const delivery: AlertDeliveryPolicy = {
    allowedHosts: c.ALERT_ALLOWED_HOSTS,
    allowPrivateNetwork: c.ALERT_ALLOW_PRIVATE_NETWORK,
    timeoutMs: c.ALERT_WEBHOOK_TIMEOUT_MS,
    maxRetries: c.ALERT_WEBHOOK_MAX_RETRIES,
  };
  return {
    timeZone: c.ALERT_TIME_ZONE,
    delivery,
    ...(c.ALERT_WEBHOOK_URL
      ? {
          webhook: {
            url: new URL(c.ALERT_WEBHOOK_URL),
            ...(c.ALERT_WEBHOOK_SECRET ? { secret: new Secret(c.ALERT_WEBHOOK_SECRET) } : {}),
            ...delivery,
          },
        }
      : {}),
    ...(c.ALERT_TEAMS_WEBHOOK_URL ? { teams: new Secret(c.ALERT_TEAMS_WEBHOOK_URL) } : {}),
    ...(c.ALERT_SLACK_WEBHOOK_URL ? { slack: new Secret(c.ALERT_SLACK_WEBHOOK_URL) } : {}),
    ...(c.ALERT_CONSOLE_URL ? { consoleUrl: c.ALERT_CONSOLE_URL.replace(/\/+$/, '') } : {}),
  };
}
