/**
 * The sync module's settings (issue 12, docs/sync.md "Site side"), checked with the rest of the
 * hub's at start-up. Sync is off unless SYNC_UPSTREAM_URL is set; then SYNC_SITE_ID is required.
 *
 * The upstream URL passes the hub's outbound URL check: https, or plain http only to a loopback
 * host (a local upstream, tests); no credentials in it. A literal private address (10.x,
 * 192.168.x, …) is refused unless SYNC_ALLOW_PRIVATE_NETWORK=true (an upstream on the LAN).
 * Host names are not resolved here: a site must start without the internet.
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import { duration, flag, int } from '../../src/config/fields.js';
import {
  checkOutboundUrl,
  isLoopbackHost,
  isNonPublicAddress,
  OutboundUrlError,
} from '../../src/http/outbound-url.js';
import { MAX_BATCH_INFLATED_BYTES, MAX_BATCH_RECORDS, siteIdSchema } from '../protocol.js';

const MIB = 1024 * 1024;
/**
 * Batch bounds, measured (BENCHMARKS.md "Issue 12"): with two batches in flight, 1 MiB of JSON
 * (about 15,000 readings, 300 kB gzip'd) drained a week of 50 nodes fastest of 1, 2 and 4 MiB;
 * larger batches keep the upstream's parsing and PostgreSQL's loading from overlapping as well.
 * The record bound is the protocol's: a readings record carries up to 1000 readings anyway.
 */
export const DEFAULT_BATCH_MAX_RECORDS = MAX_BATCH_RECORDS;
export const DEFAULT_BATCH_MAX_BYTES = MIB;

export const syncSettings = z
  .object({
    /** The upstream's base URL, e.g. `https://upstream.example.org`; unset: this hub does not sync. */
    SYNC_UPSTREAM_URL: z.string().trim().optional(),
    /** This site's id as registered upstream (`meshhub upstream site add <site_id>`). */
    SYNC_SITE_ID: z.string().trim().pipe(siteIdSchema).optional(),
    /** Disk budget of the outbox; past it the oldest raw readings are dropped (their rollups still go). */
    SYNC_OUTBOX_MAX_MB: z.coerce.number().min(1).max(1_000_000).default(256),
    /** Most records in one batch (a `readings` record holds up to 1000 readings). */
    SYNC_BATCH_MAX_RECORDS: int(1, MAX_BATCH_RECORDS).default(DEFAULT_BATCH_MAX_RECORDS),
    /** Most JSON bytes (before gzip) in one batch. */
    SYNC_BATCH_MAX_BYTES: int(4096, MAX_BATCH_INFLATED_BYTES).default(DEFAULT_BATCH_MAX_BYTES),
    /**
     * How long new readings (and node updates) wait before a push on a live link, so they go up
     * in fewer, larger batches; texts, their statuses and subscriptions go within WAKE_DEBOUNCE_MS.
     */
    SYNC_READINGS_DEBOUNCE: duration.prefault('2s'),
    /** Longest wait between two tries when the upstream does not answer (backoff cap). */
    SYNC_RETRY_MAX: duration.prefault('5m'),
    /** Accept an upstream at a private (LAN) address. */
    SYNC_ALLOW_PRIVATE_NETWORK: flag.prefault('false'),
  })
  .superRefine(
    (parsed, ctx) => {
      // Runs even when other fields failed (`when`), so every problem is reported at once.
      const c = parsed as Partial<Record<string, unknown>>;
      const debounce = c.SYNC_READINGS_DEBOUNCE;
      if (typeof debounce === 'number' && debounce > 600_000) {
        ctx.addIssue({ code: 'custom', path: ['SYNC_READINGS_DEBOUNCE'], message: 'must be at most 10m' });
      }
      const url = c.SYNC_UPSTREAM_URL;
      if (typeof url !== 'string' || url === '') return;
      const problem = upstreamUrlProblem(url, c.SYNC_ALLOW_PRIVATE_NETWORK === true);
      if (problem) ctx.addIssue({ code: 'custom', path: ['SYNC_UPSTREAM_URL'], message: problem });
      if (c.SYNC_SITE_ID === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['SYNC_SITE_ID'],
          message:
            'required when SYNC_UPSTREAM_URL is set: the id this site is registered under upstream (meshhub upstream site add <site_id>)',
        });
      }
      const retryMax = c.SYNC_RETRY_MAX;
      if (typeof retryMax === 'number' && retryMax < 1000) {
        ctx.addIssue({ code: 'custom', path: ['SYNC_RETRY_MAX'], message: 'must be at least 1s' });
      }
    },
    { when: () => true },
  );

export type SyncSettings = z.output<typeof syncSettings>;

/** Why `value` cannot be the upstream URL; undefined when it can. */
export function upstreamUrlProblem(value: string, allowPrivateNetwork: boolean): string | undefined {
  let url: URL;
  try {
    url = checkOutboundUrl(value, { allowLoopback: true });
  } catch (error) {
    return error instanceof OutboundUrlError ? error.message : 'is not a valid URL';
  }
  if (url.search || url.hash) return 'must not carry a query or a fragment';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!allowPrivateNetwork && !isLoopbackHost(host) && isIP(host) && isNonPublicAddress(host)) {
    return 'points at a private address (set SYNC_ALLOW_PRIVATE_NETWORK=true for an upstream on the LAN)';
  }
  return undefined;
}

/** The settings in the shape the sync actor uses. */
export interface SyncConfig {
  /** The upstream's base URL, without a trailing slash in its path. */
  upstream: URL;
  siteId: string;
  outboxMaxBytes: number;
  batchMaxRecords: number;
  batchMaxBytes: number;
  retryMaxMs: number;
  /** New readings and node updates are pushed this long after the first of them. */
  readingsDebounceMs: number;
  /** SYNC_ALLOW_PRIVATE_NETWORK: the upstream may resolve to a LAN address (checked at connect time). */
  allowPrivateNetwork?: boolean;
}

/** The sync configuration, or undefined when sync is off (SYNC_UPSTREAM_URL unset). */
export function syncConfigFrom(s: Partial<SyncSettings>): SyncConfig | undefined {
  if (!s.SYNC_UPSTREAM_URL || !s.SYNC_SITE_ID) return undefined;
  const upstream = new URL(s.SYNC_UPSTREAM_URL);
  upstream.pathname = upstream.pathname.replace(/\/+$/, '');
  return {
    upstream,
    siteId: s.SYNC_SITE_ID,
    outboxMaxBytes: Math.round((s.SYNC_OUTBOX_MAX_MB ?? 256) * MIB),
    batchMaxRecords: s.SYNC_BATCH_MAX_RECORDS ?? DEFAULT_BATCH_MAX_RECORDS,
    batchMaxBytes: s.SYNC_BATCH_MAX_BYTES ?? DEFAULT_BATCH_MAX_BYTES,
    retryMaxMs: s.SYNC_RETRY_MAX ?? 300_000,
    readingsDebounceMs: s.SYNC_READINGS_DEBOUNCE ?? 2_000,
    allowPrivateNetwork: s.SYNC_ALLOW_PRIVATE_NETWORK ?? false,
  };
}

/** The URL of an upstream endpoint: the base URL's path, then `path` (which starts with `/`). */
export function upstreamEndpoint(base: URL, path: string): URL {
  const url = new URL(base.href);
  url.pathname = `${base.pathname.replace(/\/+$/, '')}${path}`;
  return url;
}
