/**
 * Settings of the notifications module (README "Notifications"). Webhook URLs pass the outbound
 * check (src/http/outbound-url.ts) as every outbound URL does; a host on the LAN needs
 * NOTIFY_ALLOW_PRIVATE_NETWORK=true, which also lets browsers' push endpoints be on the LAN.
 */
import { z } from 'zod';
import { flag, int, isTimeZone, list, parsedBy, text } from '../config/fields.js';
import { checkOutboundUrl, OutboundUrlError } from '../http/outbound-url.js';
import { parseQuietHours, type QuietHours } from './quiet-hours.js';
import { WEBHOOK_FORMATS } from './schemas.js';

function webhookUrl(value: string): URL | string {
  try {
    return checkOutboundUrl(value);
  } catch (error) {
    return error instanceof OutboundUrlError ? error.message : 'expected an https URL';
  }
}

export const notificationSettings = z.object({
  /** Rules, firings and their deliveries; false: the module serves nothing and watches nothing. */
  NOTIFICATIONS: flag.prefault('true'),
  /** Firings kept at most (the oldest go first). */
  NOTIFY_HISTORY_MAX: int(100, 1_000_000).default(10_000),
  /** Seconds between the checks for nodes gone quiet and links lost. */
  NOTIFY_CHECK_SECONDS: int(5, 3_600).default(60),
  /** Every firing of every rule is also posted here (a rule may name its own webhook besides). */
  NOTIFY_WEBHOOK_URL: text
    .min(1)
    .optional()
    .transform((v, ctx) => (v === undefined ? undefined : parsedBy(webhookUrl)(v, ctx))),
  /** `json` (signed with NOTIFY_WEBHOOK_SECRET), `ntfy` (a topic URL) or `apprise` (an Apprise API /notify/<key> URL). */
  NOTIFY_WEBHOOK_FORMAT: z.enum(WEBHOOK_FORMATS).default('json'),
  /** Signs JSON webhook bodies: `X-Meshhub-Signature: sha256=<hex HMAC-SHA256 of the body>`. */
  NOTIFY_WEBHOOK_SECRET: z.string().min(16, 'must be at least 16 characters').max(256).optional(),
  /** Webhook and push hosts allowed (`*.example.org`); empty: any. */
  NOTIFY_ALLOWED_HOSTS: list.default([]),
  /** Let webhooks and browsers' push endpoints resolve to private (LAN) addresses. */
  NOTIFY_ALLOW_PRIVATE_NETWORK: flag.prefault('false'),
  NOTIFY_WEBHOOK_TIMEOUT_MS: int(100, 120_000).default(10_000),
  NOTIFY_WEBHOOK_MAX_RETRIES: int(0, 10).default(3),
  /** `22:00-07:00`: no push or webhook between these times (firings are still stored and on MQTT). */
  NOTIFY_QUIET_HOURS: z
    .string()
    .optional()
    .transform((v, ctx): QuietHours | undefined =>
      v === undefined || v.trim() === '' ? undefined : parsedBy(parseQuietHours)(v, ctx),
    ),
  /** The time zone of quiet hours (IANA, e.g. Europe/Zurich). */
  NOTIFY_TIME_ZONE: text
    .refine(isTimeZone, 'expected an IANA time zone such as UTC or Europe/Zurich')
    .default('UTC'),
  /** The VAPID contact sent to push services: `mailto:you@example.org` or an https URL. */
  VAPID_SUBJECT: text
    .regex(/^(mailto:\S+@\S+|https:\/\/\S+)$/, 'expected mailto:you@example.org or an https:// URL')
    .default('mailto:meshhub@localhost.invalid'),
});

export type NotificationSettings = z.output<typeof notificationSettings>;
