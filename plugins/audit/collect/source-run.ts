/**
 * What a fetch of one source works with, and the step every fetcher shares: upstream records →
 * normalised events → stored, counted in source health as it goes (so `/api/source-health`
 * shows a long run's progress, and a run cut short has still counted what it stored).
 */
import type { KernelLogger } from '../../../src/kernel/actor.js';
import type { AuditMetrics } from '../metrics.js';
import { type UpstreamClient, UpstreamError } from '../microsoft/upstream.js';
import { type NormalizedEvent, normalizeRecord } from '../normalize.js';
import type { AuditConfig } from '../settings.js';
import type { SourceName } from '../sources.js';
import type { AuditRepositories } from '../store/audit-store.js';
import type { SourceStates } from '../store/source-state.js';
import type { TenantConfig } from '../tenants/settings.js';

export interface RunTotals {
  fetched: number;
  stored: number;
  duplicates: number;
  malformed: number;
  /** Content blobs that failed this run and wait for a retry. */
  failedBlobs: number;
  /** Content blobs that expired before a retry succeeded: their events are lost upstream. */
  expiredBlobs: number;
}

export interface SourceRun {
  source: SourceName;
  /** Issue 29: the tenant fetched: its credentials went into `client`, its events carry its name. */
  tenant: TenantConfig;
  config: AuditConfig;
  client: UpstreamClient;
  repos: () => AuditRepositories;
  /** This tenant's watermarks, health and content blobs. */
  states: () => SourceStates;
  metrics: AuditMetrics;
  log: KernelLogger;
  signal: AbortSignal;
  now: () => number;
  /** When this run began (ms UTC): where the next run's window starts, less the overlap. */
  startedAt: number;
  totals: RunTotals;
}

export function emptyTotals(): RunTotals {
  return { fetched: 0, stored: 0, duplicates: 0, malformed: 0, failedBlobs: 0, expiredBlobs: 0 };
}

/** The first time a fetch may ask for: the watermark less the overlap, or the initial lookback. */
export function windowStart(run: SourceRun, earliest = 0): number {
  const state = run.states().get(run.source);
  const from =
    state?.watermark != null
      ? state.watermark - run.config.overlapMs
      : run.startedAt - run.config.initialLookbackMs;
  return Math.max(from, earliest);
}

/** Normalises and stores one page or blob; a malformed record is counted and skipped. */
export async function ingest(run: SourceRun, records: readonly unknown[]): Promise<void> {
  const events: NormalizedEvent[] = [];
  let malformed = 0;
  let reason: string | undefined;
  const now = run.now();
  for (const record of records) {
    const outcome = normalizeRecord(run.source, record, now, run.tenant.name);
    if (outcome.ok) events.push(outcome.event);
    else {
      malformed++;
      reason ??= outcome.reason;
    }
  }
  const written = await run.repos().writer.write(events);
  const counts = {
    fetched: records.length,
    stored: written.stored,
    duplicates: written.duplicates,
    malformed: malformed + written.failed,
  };
  run.totals.fetched += counts.fetched;
  run.totals.stored += counts.stored;
  run.totals.duplicates += counts.duplicates;
  run.totals.malformed += counts.malformed;
  run.states().add(run.source, counts);
  run.metrics.countRecords(run.source, counts, run.tenant.name);
  if (malformed)
    run.log.warn(
      { tenant: run.tenant.name, source: run.source, malformed, reason },
      'skipped malformed upstream records',
    );
  if (written.error)
    run.log.error(
      { tenant: run.tenant.name, source: run.source, err: written.error },
      'events could not be stored',
    );
}

/** Counts a malformed page or blob (a body that is not what the API documents). */
export function countMalformed(run: SourceRun, n = 1): void {
  run.totals.malformed += n;
  run.states().add(run.source, { malformed: n });
  run.metrics.countRecords(run.source, { malformed: n }, run.tenant.name);
}

/** A GET whose body is not JSON counts as malformed upstream data, then fails as usual. */
export async function getCounted(run: SourceRun, url: URL): ReturnType<SourceRun['client']['get']> {
  try {
    return await run.client.get(url, run.signal);
  } catch (error) {
    if (error instanceof UpstreamError && error.kind === 'malformed_response') countMalformed(run);
    throw error;
  }
}
