/**
 * Applies one site batch to PostgreSQL, atomically and exactly once (docs/sync.md "Upstream",
 * issue 12 "Bad input and faults").
 *
 * One transaction per batch, in few statements (BENCHMARKS.md "Issue 12": each statement and
 * each commit is a cost per batch, whatever its size):
 * 1. one statement locks the site's row (`SELECT … FOR UPDATE`, which serialises the batches of
 *    one site across every upstream process sharing the database: the second of two processes
 *    handed the same batch waits there), remembers the signed request's `jti` in
 *    `sync_request_ids` (a replay is refused) and looks the batch up in `sync_batches` (a retry
 *    of an applied batch is acknowledged as a duplicate, nothing applied). That lookup used the
 *    statement's snapshot, taken before the lock was granted: a batch that looks like it goes
 *    backwards is looked up once more before it is refused, so the process that waited for the
 *    other to commit the same batch finds it;
 * 2. the records: readings as one binary `COPY … FROM STDIN` into `readings`, the rest in bulk
 *    (a few multi-row statements over `unnest()` arrays, never one statement per record);
 * 3. one statement adds the readings' sums to the hourly and daily rollups, merges the latest
 *    rows, records the batch in `sync_batches` and moves the site's cursor, counters and (for a
 *    signed request) last-contact time.
 * Expired request ids are deleted at most once a minute, outside the batches' transactions. A
 * refusal (gap, backwards, replay, unknown or revoked site) rolls everything back.
 *
 * Readings follow the hub's own rules (src/store/reading-writer.ts), so the upstream's rollups
 * mean the same as the site's:
 * - only what a reading adds counts: all of a new row, or only the fields it fills in a row
 *   stored before (COALESCE, never overwriting); a reading seen again adds nothing;
 * - contributions are summed per (node, hour) and (node, day) with the hub's own `accumulate`,
 *   then added to each bucket once (`col = col + excluded.col`) — unless the bucket came whole
 *   from the site (`from_site`, a `rollup` record for readings it dropped from its outbox),
 *   whose figures stand;
 * - the latest row moves field by field, only to a value at least as new.
 * The fast path takes every row of the batch for a new one and COPYs them all: the primary key
 * is the check. Should any be stored already (a fill of a row the upstream holds, the same row
 * twice in the batch, or an old-style `reading` record that repeats a whole row), the COPY
 * fails with a unique violation, the transaction is rolled back, and the batch is applied again
 * the careful way: the rows looked up first, and only what each adds stored and counted. So the
 * rollups never depend on what a site promises about its rows, and a batch applied once adds
 * its values once.
 */
import type pg from 'pg';
import type { Logger } from '../../src/log.js';
import {
  type Batch,
  batchCoverageProblem,
  type ReadingRow,
  type RecordBody,
  recordEntries,
} from '../protocol.js';
import {
  Contributions,
  copyNewReadings,
  FastPathConflict,
  mergeReadings,
  readingsCtes,
  staged,
  stageRollups,
} from './apply-readings.js';
import { applyRecords, type Sorted, sortRecords } from './apply-records.js';
import { ensurePartitions } from './db/partitions.js';
import { withTransaction } from './db/pool.js';
import { storable } from './db/unnest.js';
import { notifyHistoryChanged } from './history-changes.js';

export type ApplyRefusal =
  | 'gap'
  | 'sequence_backwards'
  | 'unknown_site'
  | 'revoked_site'
  | 'replayed_request';

export type ApplyOutcome =
  | { kind: 'applied' | 'duplicate'; ackedSeq: number }
  | { kind: 'refused'; reason: ApplyRefusal; expectedSeq: number; detail: string };

/** What a batch changed, for the live stream (told after the commit). */
export interface AppliedChanges {
  /** Readings the batch added (new rows and rows it filled). */
  readingCount: number;
  /**
   * Per node, the newest reading the batch added (node id, ts, then the metrics it added, null
   * elsewhere): what a dashboard needs to move its latest values, whatever the batch's size.
   */
  latestReadings: ReadingRow[];
  /** The node rows of the batch, the newest per node. */
  nodes: RecordBody<'node'>[];
}

export interface BatchApplierOptions {
  now?: () => number;
  /** Told, after the commit, the ids of the messages a batch inserted or changed. */
  onMessages?: (siteId: string, messageIds: string[]) => void;
  /** Told, after the commit, the readings and nodes a batch applied (when it applied any). */
  onApplied?: (siteId: string, changes: AppliedChanges) => void;
  log?: Logger;
}

/** SQLSTATEs of partition DDL that lost a race or a lock: the rows go to the default partition for now. */
const PARTITION_RACES = new Set(['55P03', '23514', '40P01', '42P07']);
/** How long past its `exp` a request id is kept: the verifier's clock tolerance, and some. */
const REQUEST_ID_GRACE_MS = 5 * 60_000;
/** Expired request ids are deleted at most this often (by whichever batch comes then). */
const REQUEST_ID_PRUNE_MS = 60_000;

/** A refusal decided inside the transaction: thrown to roll it back, caught in apply(). */
class Refused extends Error {
  constructor(readonly outcome: Extract<ApplyOutcome, { kind: 'refused' }>) {
    super(outcome.detail);
  }
}

/**
 * The oldest time whose rollup buckets the batch changes: its readings' times and the starts of
 * the buckets it sends whole (undefined → null: none). History caches drop buckets from there on.
 */
function changedFrom(batch: Batch): number | null {
  let oldest: number | null = null;
  const see = (ts: number) => {
    if (oldest === null || ts < oldest) oldest = ts;
  };
  for (const r of batch.records) {
    if (r.kind === 'readings')
      for (const row of (r.body as { rows: unknown[][] }).rows) see(row[1] as number);
    else if (r.kind === 'reading') see((r.body as { ts: number }).ts);
    else if (r.kind === 'rollup') see((r.body as { bucket_start: number }).bucket_start);
  }
  return oldest;
}

/**
 * Step 3, one statement: the readings' sums into the rollups, their newest values into the
 * latest rows, the batch into sync_batches, and the site's cursor, counters and contact time.
 */
function endBatchQuery(
  siteId: string,
  batch: Batch,
  readings: Contributions,
  now: number,
  contact: boolean,
): pg.QueryConfig {
  let newest: number | null = null;
  // Outbox entries carried as records (a merged `readings` record counts each of its entries),
  // as the site counts what it sent.
  let entries = 0;
  for (const r of batch.records) {
    if (newest === null || r.at > newest) newest = r.at;
    entries += recordEntries(r);
  }
  const params: unknown[] = [
    siteId,
    batch.first_seq,
    batch.last_seq,
    entries,
    now,
    newest,
    contact,
    changedFrom(batch),
  ];
  const ctes: string[] = [];
  if (readings.nodes.size > 0) {
    ctes.push(...readingsCtes(readings, params));
  }
  ctes.push(
    `batch AS (INSERT INTO sync_batches (site_id, first_seq, last_seq, records, applied_at, changed_from)
      VALUES ($1, $2, $3, $4, $5, $8::bigint))`,
  );
  return {
    // The same text for every batch (with readings or without): parsed once per connection.
    name: readings.nodes.size > 0 ? 'meshhub-sync-end-batch-readings' : 'meshhub-sync-end-batch',
    text: `WITH ${ctes.join(',\n')}
      UPDATE sites SET acked_seq = $3, last_batch_at = $5,
        last_contact_at = CASE WHEN $7 THEN $5 ELSE last_contact_at END,
        last_record_at = GREATEST(last_record_at, $6::bigint),
        records_applied = records_applied + $4
      WHERE site_id = $1`,
    values: params,
  };
}

/** Locks the site, remembers the request id, finds the batch if applied: step 1. */
const BEGIN_BATCH = `
  WITH site AS (SELECT acked_seq, revoked_at FROM sites WHERE site_id = $1 FOR UPDATE),
  jti AS (
    INSERT INTO sync_request_ids (site_id, jti, expires_at)
    SELECT $1, $3::text, $4::bigint FROM site WHERE $3::text IS NOT NULL
    ON CONFLICT (site_id, jti) DO NOTHING
    RETURNING 1
  )
  SELECT s.acked_seq, s.revoked_at,
    (SELECT last_seq FROM sync_batches WHERE site_id = $1 AND first_seq = $2) AS applied_last,
    (SELECT count(*)::int FROM jti) AS jti_new
  FROM site s`;

// ---- the applier ----

/** One batch request of a site in progress in this process (BatchApplier.arrived). */
export interface BatchTicket {
  readonly siteId: string;
  /** Arrival order in this process. */
  readonly number: number;
  end(): void;
}

export class BatchApplier {
  private readonly now: () => number;
  private prunedAt = Number.NEGATIVE_INFINITY;
  /** Per site, the batch requests in progress here: arrival number → settles when answered. */
  private readonly inProgress = new Map<string, Map<number, Promise<void>>>();
  private tickets = 0;

  constructor(
    private readonly pool: pg.Pool,
    private readonly options: BatchApplierOptions = {},
  ) {
    this.now = options.now ?? Date.now;
  }

  /**
   * Applies `batch` from `siteId` in one transaction, or refuses it and changes nothing. `jti`:
   * the signed request's id, refused if seen before. Throws only for a database failure (or a
   * batch that is not for `siteId` / does not cover its range: the caller validates that).
   */
  async apply(
    siteId: string,
    batch: Batch,
    jti?: { value: string; expiresAt: number },
    ticket?: BatchTicket,
  ): Promise<ApplyOutcome> {
    if (batch.site_id !== siteId) throw new Error(`the batch is for site ${batch.site_id}, not ${siteId}`);
    const coverage = batchCoverageProblem(batch);
    if (coverage) throw new Error(`the batch does not cover its range: ${coverage}`);
    const own = ticket ?? this.arrived(siteId);
    try {
      const records = sortRecords(batch.records);
      const now = this.now();
      await this.pruneRequestIds(now);
      await this.preparePartitions(records);
      let outcome = await this.applyAndTell(siteId, batch, records, jti, now);
      if (outcome.kind === 'refused' && outcome.reason === 'gap') {
        // A site sends its next batch while the one before is still being applied: when that
        // one arrived here first and is not done yet, this one waits for it, then tries again.
        const earlier = this.earlierThan(own);
        if (earlier.length > 0) {
          await Promise.allSettled(earlier);
          outcome = await this.applyAndTell(siteId, batch, records, jti, this.now());
        }
      }
      return outcome;
    } finally {
      if (!ticket) own.end();
    }
  }

  /**
   * A batch request of `siteId` arrived at this process (before its body is read). A batch
   * that finds a gap waits for the requests of its site that arrived before it (in this
   * process) and tries again: a site keeps two batches in flight. `end()` when it is answered.
   */
  arrived(siteId: string): BatchTicket {
    let site = this.inProgress.get(siteId);
    if (!site) {
      site = new Map();
      this.inProgress.set(siteId, site);
    }
    const tickets = site;
    const number = ++this.tickets;
    let end!: () => void;
    const done = new Promise<void>((resolve) => {
      end = resolve;
    });
    const ticket: BatchTicket = {
      siteId,
      number,
      end: () => {
        end();
        tickets.delete(number);
        if (tickets.size === 0 && this.inProgress.get(siteId) === tickets) this.inProgress.delete(siteId);
      },
    };
    tickets.set(number, done);
    return ticket;
  }

  private earlierThan(ticket: BatchTicket): Promise<void>[] {
    const site = this.inProgress.get(ticket.siteId);
    if (!site) return [];
    return [...site].filter(([number]) => number < ticket.number).map(([, done]) => done);
  }

  /** One try: applied (the fast path, or the careful one after a conflict), or refused. */
  private async applyAndTell(
    siteId: string,
    batch: Batch,
    records: Sorted,
    jti: { value: string; expiresAt: number } | undefined,
    now: number,
  ): Promise<ApplyOutcome> {
    try {
      let applied: { outcome: ApplyOutcome; changes?: AppliedChanges; messageIds: string[] };
      try {
        applied = await this.applyOnce(siteId, batch, records, jti, now, true);
      } catch (error) {
        if (!(error instanceof FastPathConflict)) throw error;
        // Rolled back whole: everything again, the readings the careful way.
        applied = await this.applyOnce(siteId, batch, records, jti, now, false);
      }
      const { outcome, changes, messageIds } = applied;
      if (outcome.kind === 'applied') {
        if (messageIds.length > 0) this.options.onMessages?.(siteId, messageIds);
        if (changes && (changes.readingCount > 0 || changes.nodes.length > 0)) {
          this.options.onApplied?.(siteId, changes);
        }
      }
      return outcome;
    } catch (error) {
      if (error instanceof Refused) return error.outcome;
      throw error;
    }
  }

  /**
   * Deletes the request ids that expired long enough ago to never verify again, at most once
   * a minute (outside any batch's transaction); called by apply, and by whoever wants it now.
   */
  async pruneRequestIds(now = this.now(), force = false): Promise<void> {
    if (!force && now - this.prunedAt < REQUEST_ID_PRUNE_MS) return;
    this.prunedAt = now;
    await this.pool.query('DELETE FROM sync_request_ids WHERE expires_at < $1', [now - REQUEST_ID_GRACE_MS]);
  }

  private async applyOnce(
    siteId: string,
    batch: Batch,
    records: Sorted,
    jti: { value: string; expiresAt: number } | undefined,
    now: number,
    fast: boolean,
  ): Promise<{ outcome: ApplyOutcome; changes?: AppliedChanges; messageIds: string[] }> {
    let created: pg.PoolClient | undefined;
    type Result = { outcome: ApplyOutcome; changes?: AppliedChanges; messageIds: string[] };
    const result = await withTransaction(this.pool, async (client): Promise<Result> => {
      // A signed request (it has a jti) is the site's contact; a direct apply is not.
      const contact = jti !== undefined;
      // The fast path COPYs the readings BEFORE it locks the site: the COPY, the biggest part of
      // PostgreSQL's work, then runs while the site's batch before it (the site keeps two in
      // flight) is still finishing on another connection. Nothing of it stays unless the checks
      // after it pass; a batch applied before conflicts in the COPY (its rows are there), and
      // the careful path, which locks first, finds it.
      let end: pg.QueryConfig | undefined;
      let rollups: Buffer | undefined;
      let readings: Contributions | undefined;
      if (fast && records.readings.length > 0) {
        readings = await copyNewReadings(client, siteId, records.readings, now, (sums) => {
          // What follows is made (JS) while PostgreSQL still loads the COPY's last rows.
          rollups = sums.nodes.size > 0 ? sums.rollupCopy() : undefined;
          end = endBatchQuery(siteId, batch, sums, now, contact);
        });
        if (rollups && (await stageRollups(client, rollups))) created = client;
      }
      const acked = await this.beginBatch(client, siteId, batch, jti);
      if (acked === 'duplicate') {
        // Rows this transaction copied (none, for a batch really applied before) must not stay.
        if (readings && readings.count > 0) throw new FastPathConflict();
        const site = await client.query<{ acked_seq: number }>(
          `UPDATE sites SET last_contact_at = CASE WHEN $3 THEN $2 ELSE last_contact_at END
           WHERE site_id = $1 RETURNING acked_seq`,
          [siteId, now, contact],
        );
        return { outcome: { kind: 'duplicate', ackedSeq: site.rows[0]!.acked_seq }, messageIds: [] };
      }
      if (!readings) {
        readings =
          records.readings.length === 0
            ? new Contributions()
            : await mergeReadings(client, siteId, records.readings, now);
        if (readings.nodes.size > 0 && (await stageRollups(client, readings.rollupCopy()))) created = client;
      }
      const { messageIds, nodes } = await applyRecords(client, siteId, records, now);
      await client.query(end ?? endBatchQuery(siteId, batch, readings, now, contact));
      // Every process's history cache drops what this batch changed, at its commit.
      const changed = changedFrom(batch);
      if (changed !== null) await notifyHistoryChanged(client, siteId, changed);
      const changes: AppliedChanges = {
        readingCount: readings.count,
        latestReadings: readings.newest(),
        nodes,
      };
      return { outcome: { kind: 'applied', ackedSeq: batch.last_seq }, changes, messageIds };
    });
    if (created) staged.add(created);
    return result;
  }

  /**
   * Step 1: locks the site's row (serialising its batches in every process), checks the
   * request and the sequence. Returns acked_seq, or 'duplicate' for a batch applied before.
   */
  private async beginBatch(
    client: pg.PoolClient,
    siteId: string,
    batch: Batch,
    jti: { value: string; expiresAt: number } | undefined,
  ): Promise<number | 'duplicate'> {
    const { rows } = await client.query<{
      acked_seq: number;
      revoked_at: number | null;
      applied_last: number | null;
      jti_new: number;
    }>({
      name: 'meshhub-sync-begin-batch',
      text: BEGIN_BATCH,
      values: [siteId, batch.first_seq, jti ? storable(jti.value) : null, jti?.expiresAt ?? null],
    });
    const site = rows[0];
    if (!site) {
      throw new Refused({
        kind: 'refused',
        reason: 'unknown_site',
        expectedSeq: 0,
        detail: `no site ${siteId}`,
      });
    }
    const expectedSeq = site.acked_seq + 1;
    if (site.revoked_at !== null) {
      throw new Refused({
        kind: 'refused',
        reason: 'revoked_site',
        expectedSeq,
        detail: `site ${siteId} is revoked`,
      });
    }
    if (jti && site.jti_new !== 1) {
      throw new Refused({
        kind: 'refused',
        reason: 'replayed_request',
        expectedSeq,
        detail: `this signed request (batch ${batch.first_seq}..${batch.last_seq}) was received before`,
      });
    }
    if (site.applied_last === batch.last_seq) return 'duplicate';
    const acked = site.acked_seq;
    if (batch.first_seq > acked + 1) {
      throw new Refused({
        kind: 'refused',
        reason: 'gap',
        expectedSeq,
        detail: `the batch starts at ${batch.first_seq}, but the next sequence number the upstream needs is ${expectedSeq}`,
      });
    }
    if (batch.first_seq <= acked) {
      // The lookup above saw the snapshot from before the lock was granted: when another
      // process committed this very batch meanwhile, only a new statement sees it.
      if (site.applied_last === null) {
        const again = await client.query<{ last_seq: number }>(
          'SELECT last_seq FROM sync_batches WHERE site_id = $1 AND first_seq = $2',
          [siteId, batch.first_seq],
        );
        if (again.rows[0]?.last_seq === batch.last_seq) return 'duplicate';
      }
      throw new Refused({
        kind: 'refused',
        reason: 'sequence_backwards',
        expectedSeq,
        detail: `the batch starts at ${batch.first_seq}, at or before ${acked}, which is applied already`,
      });
    }
    return acked;
  }

  /** Creates the monthly partitions the batch's rows need, outside the batch's transaction. */
  private async preparePartitions(records: Sorted): Promise<void> {
    if (records.months.size === 0) return;
    try {
      await ensurePartitions(this.pool, [...records.months], { now: this.now });
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code !== 'string' || !PARTITION_RACES.has(code)) throw error;
      // The rows go to the default partition; a later ensurePartitions moves them.
      this.options.log?.warn({ err: error }, 'creating a partition failed; rows go to the default partition');
    }
  }
}
