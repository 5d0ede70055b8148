/**
 * Settings of SIEM forwarding (issue 14), spread into the audit plugin's one settings schema so
 * every problem is reported at start-up with the others. SIEM_ENABLED itself is in ../settings.ts.
 *
 * SIEM_WEBHOOK_URL passes src/http/outbound-url.ts as the other outbound URLs do: https (plain
 * http only to loopback), no credentials in it, SIEM_ALLOWED_HOSTS when set; and at every send,
 * the host must not resolve to a private address unless SIEM_ALLOW_PRIVATE_NETWORK=true (an
 * on-premises SIEM on the LAN — its own opt-in, like LLM_ and ALERT_ALLOW_PRIVATE_NETWORK, so
 * allowing the SIEM does not also allow the Microsoft endpoints into the LAN).
 */
import { z } from 'zod';
import { flag, int, list, text } from '../../../src/config/fields.js';
import { Secret } from '../../../src/config/secret.js';
import { checkOutboundUrl, OutboundUrlError } from '../../../src/http/outbound-url.js';

export const SIEM_FORMATS = ['meshhub-json', 'splunk-hec'] as const;
export type SiemFormat = (typeof SIEM_FORMATS)[number];

export const siemSettingsShape = {
  SIEM_WEBHOOK_URL: text.min(1).optional(),
  SIEM_WEBHOOK_SECRET: z.string().min(16, 'must be at least 16 characters').max(256).optional(),
  SIEM_FORMAT: text
    .toLowerCase()
    .pipe(z.enum(SIEM_FORMATS, { error: `expected one of ${SIEM_FORMATS.join(', ')}` }))
    .default('meshhub-json'),
  SIEM_HEC_TOKEN: z.string().trim().min(1).max(256).optional(),
  SIEM_HEC_SOURCETYPE: text.min(1).max(128).default('meshhub:audit'),
  SIEM_HEC_INDEX: text.min(1).max(128).optional(),
  SIEM_HEC_HOST: text.min(1).max(256).optional(),
  SIEM_ALLOWED_HOSTS: list.default([]),
  SIEM_ALLOW_PRIVATE_NETWORK: flag.default(false),
  SIEM_BATCH_MAX_EVENTS: int(1, 10_000).default(500),
  SIEM_BATCH_MAX_BYTES: int(1_024, 64 * 1024 * 1024).default(1024 * 1024),
  SIEM_TIMEOUT_MS: int(100, 300_000).default(15_000),
  SIEM_BACKOFF_BASE_MS: int(1, 600_000).default(1_000),
  SIEM_BACKOFF_MAX_MS: int(1, 3_600_000).default(300_000),
};

/** Checks spanning SIEM settings; `c` may hold anything (other settings may be invalid). */
export function refineSiemSettings(c: Partial<Record<string, unknown>>, ctx: z.RefinementCtx): void {
  const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
  const url = c.SIEM_WEBHOOK_URL;
  if (typeof url === 'string') {
    try {
      checkOutboundUrl(url, {
        allowedHosts: Array.isArray(c.SIEM_ALLOWED_HOSTS) ? (c.SIEM_ALLOWED_HOSTS as string[]) : [],
      });
    } catch (error) {
      issue('SIEM_WEBHOOK_URL', error instanceof OutboundUrlError ? error.message : 'invalid URL');
    }
  }
  if (c.SIEM_ENABLED !== true) return;
  if (url === undefined) issue('SIEM_WEBHOOK_URL', 'required with SIEM_ENABLED=true');
  if (c.SIEM_FORMAT === 'splunk-hec') {
    if (c.SIEM_HEC_TOKEN === undefined) issue('SIEM_HEC_TOKEN', 'required with SIEM_FORMAT=splunk-hec');
  } else if (c.SIEM_WEBHOOK_SECRET === undefined) {
    issue('SIEM_WEBHOOK_SECRET', 'required with SIEM_ENABLED=true (every batch is signed with it)');
  }
  const [base, max] = [c.SIEM_BACKOFF_BASE_MS, c.SIEM_BACKOFF_MAX_MS];
  if (typeof base === 'number' && typeof max === 'number' && max < base) {
    issue('SIEM_BACKOFF_MAX_MS', 'must not be below SIEM_BACKOFF_BASE_MS');
  }
}

export interface SiemConfig {
  url: URL;
  format: SiemFormat;
  /** Signs every body (`X-Meshhub-Signature`); required for meshhub-json, optional for HEC. */
  secret?: Secret;
  hec: { token?: Secret; sourcetype: string; index?: string; host?: string };
  allowedHosts: string[];
  allowPrivateNetwork: boolean;
  batchMaxEvents: number;
  /** Bound on a batch's uncompressed JSON; one event larger than this still goes, alone. */
  batchMaxBytes: number;
  timeoutMs: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
}

const siemSettings = z.object(siemSettingsShape);
type SiemSettings = z.output<typeof siemSettings>;

/** The forwarding config when SIEM_ENABLED=true (the refinement guarantees the URL), else undefined. */
export function siemConfigFrom(c: SiemSettings & { SIEM_ENABLED: boolean }): SiemConfig | undefined {
  if (!c.SIEM_ENABLED || !c.SIEM_WEBHOOK_URL) return undefined;
  return {
    url: new URL(c.SIEM_WEBHOOK_URL),
    format: c.SIEM_FORMAT,
    ...(c.SIEM_WEBHOOK_SECRET ? { secret: new Secret(c.SIEM_WEBHOOK_SECRET) } : {}),
    hec: {
      ...(c.SIEM_HEC_TOKEN ? { token: new Secret(c.SIEM_HEC_TOKEN) } : {}),
      sourcetype: c.SIEM_HEC_SOURCETYPE,
      ...(c.SIEM_HEC_INDEX ? { index: c.SIEM_HEC_INDEX } : {}),
      ...(c.SIEM_HEC_HOST ? { host: c.SIEM_HEC_HOST } : {}),
    },
    allowedHosts: c.SIEM_ALLOWED_HOSTS,
    allowPrivateNetwork: c.SIEM_ALLOW_PRIVATE_NETWORK,
    batchMaxEvents: c.SIEM_BATCH_MAX_EVENTS,
    batchMaxBytes: c.SIEM_BATCH_MAX_BYTES,
    timeoutMs: c.SIEM_TIMEOUT_MS,
    backoffBaseMs: c.SIEM_BACKOFF_BASE_MS,
    backoffMaxMs: c.SIEM_BACKOFF_MAX_MS,
  };
}
