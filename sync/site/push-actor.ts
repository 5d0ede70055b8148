/**
 * The site's sync actor (docs/sync.md "Push"): drains the outbox to the upstream and holds the
 * downlink connection (downlink-client.ts). Being offline is normal for a site: the actor stays
 * ready, the outbox grows within its disk budget, and the push resumes where the upstream's
 * cursor says when the link comes back.
 *
 * One loop; each cycle pushes what the outbox held when it began:
 * 1. Probe `GET /api/sync/v1/ping` (signed): the upstream's clock (the offset signs every later
 *    request, so a site clock hours off still syncs; records keep their own times) and its
 *    cursor — ahead of ours means an ack was lost in flight, and it is adopted.
 * 2. POST batches (bounded in records and JSON bytes, gzip'd, the body hash signed), two in
 *    flight, in order (PIPELINE_DEPTH): while the upstream applies one (PostgreSQL's work) it
 *    receives and checks the next (its own), and the site reads, gzips and signs the one after
 *    meanwhile (dropped when an answer moves the cursor elsewhere). A cycle's first batches are
 *    small and double up to the limit, so the upstream starts at once. 200 acknowledges up to
 *    `acked_seq`; a 409 whose `expected_seq` is ahead is adopted; a `gap` for the second batch
 *    in flight (it reached another upstream process before the first was applied) is sent
 *    again once it leads; another 4xx is a refusal (last_error, the longest backoff); a
 *    network error, a timeout or a 5xx backs off exponentially with full jitter
 *    (1 s … SYNC_RETRY_MAX).
 * 3. Idle: new outbox entries (the bus events that mean them) wake the loop: texts, their
 *    statuses and subscriptions WAKE_DEBOUNCE_MS after the first of them, so a status reaches
 *    the upstream within a second on a live link; readings and node updates once none came for
 *    SYNC_READINGS_DEBOUNCE (2 s), at the latest READINGS_MAX_WAIT_MS after the first: a burst of
 *    ingest is pushed after it, in a few large batches (the upstream's cost is per batch as much
 *    as per row), not during it. Otherwise it probes again every 30 s.
 * The outbox's disk budget is enforced after each cycle and once a minute.
 */
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { z } from 'zod';
import type { HubBus } from '../../src/domain/events.js';
import { nodeIdFromNum } from '../../src/domain/node.js';
import {
  type AddressPolicy,
  type GuardedFetch,
  guardedFetch,
  refusedAddressOf,
} from '../../src/http/guarded-fetch.js';
import { Actor } from '../../src/kernel/actor.js';
import type { Logger } from '../../src/log.js';
import type { Database } from '../../src/store/database.js';
import {
  type BatchAck,
  batchAckSchema,
  batchCoverageProblem,
  MAX_BATCH_BYTES,
  type PingAnswer,
  pingAnswerSchema,
  recordEntries,
  SYNC_API,
  SYNC_PROTOCOL_VERSION,
} from '../protocol.js';
import { CLOCK_TOLERANCE_S, type ClaimsSigner, signSiteRequest } from '../signing.js';
import { DownlinkApplier } from './downlink-apply.js';
import {
  type CorrectedClock,
  DownlinkClient,
  type DownlinkState,
  retryDelay,
  serverTimeOf,
} from './downlink-client.js';
import type { SyncMetrics } from './metrics.js';
import { Outbox, type OutboxBatch, type OutboxStats } from './outbox.js';
import { enableOutbox } from './outbox-schema.js';
import { type SyncConfig, upstreamEndpoint } from './settings.js';

const gzipAsync = promisify(gzip);

/** Keys of `sync_state` this actor writes (the outbox keeps `acked_seq` and `dropped_total`). */
export const SYNC_STATE = {
  lastSuccessAt: 'last_success_at',
  lastError: 'last_error',
  lastErrorAt: 'last_error_at',
  clockOffsetMs: 'clock_offset_ms',
  downlinkState: 'downlink_state',
  downlinkStateAt: 'downlink_state_at',
} as const;

/** Idle: probe the upstream this often. */
export const IDLE_PROBE_MS = 30_000;
/**
 * New texts, statuses and subscription changes are pushed this long after the first of them
 * (more usually follow); readings and node updates wait SYNC_READINGS_DEBOUNCE.
 */
export const WAKE_DEBOUNCE_MS = 150;
const BUDGET_INTERVAL_MS = 60_000;
const PING_TIMEOUT_MS = 10_000;
const BATCH_TIMEOUT_MS = 60_000;
/**
 * gzip level. It runs on libuv's thread pool (async gzip), not on the event loop, and while the
 * batch before is in flight; see GZIP_LEVEL in BENCHMARKS.md "Issue 12" for the measurements.
 */
const GZIP_LEVEL = 1;
const MAX_PROBLEM_BYTES = 8 * 1024;
/** A clock correction smaller than this is not worth a write. */
const CLOCK_PERSIST_STEP_MS = 1_000;

/** The hub's site clock corrected by the upstream's `server_time` (persisted in `sync_state`). */
export class SyncClock implements CorrectedClock {
  private offsetMs = 0;
  private persistedMs = 0;

  constructor(
    private readonly persist: (offsetMs: number) => void,
    initialOffsetMs = 0,
    private readonly localNow: () => number = Date.now,
  ) {
    this.offsetMs = initialOffsetMs;
    this.persistedMs = initialOffsetMs;
  }

  get offset(): number {
    return this.offsetMs;
  }

  now(): number {
    return this.localNow() + this.offsetMs;
  }

  local(): number {
    return this.localNow();
  }

  /** A server time answered to a request sent at `sentAt` and answered at `receivedAt` (local ms). */
  observe(serverTime: number, sentAt: number, receivedAt: number): void {
    this.set(serverTime - (sentAt + receivedAt) / 2);
  }

  correct(serverTime: number, sentAt: number, receivedAt: number): boolean {
    const offset = serverTime - (sentAt + receivedAt) / 2;
    // Within the tokens' tolerance the clock is good enough; a second-resolution Date is no better.
    if (Math.abs(offset - this.offsetMs) <= (CLOCK_TOLERANCE_S * 1000) / 2) return false;
    this.set(offset);
    return true;
  }

  private set(offsetMs: number): void {
    this.offsetMs = Math.round(offsetMs);
    if (Math.abs(this.offsetMs - this.persistedMs) >= CLOCK_PERSIST_STEP_MS) {
      this.persistedMs = this.offsetMs;
      this.persist(this.offsetMs);
    }
  }
}

/** The upstream refused a request (a 4xx problem): retrying the same soon will not help. */
export class UpstreamRefusal extends Error {
  override readonly name = 'UpstreamRefusal';
  constructor(
    readonly status: number,
    /** `gap`, `unknown_site`, … (the problem type's last part), or `http_<status>`. */
    readonly reason: string,
    message: string,
    readonly expectedSeq?: number,
  ) {
    super(message);
  }
}

/** The upstream could not be reached or failed (network, timeout, 5xx, a garbled answer). */
export class UpstreamUnavailable extends Error {
  override readonly name = 'UpstreamUnavailable';
}

export interface SyncActorDeps {
  config: SyncConfig;
  db: Database;
  bus: HubBus;
  log: Logger;
  signer: ClaimsSigner;
  metrics: SyncMetrics;
  /** The site's clock (tests move it); default Date.now. */
  now?: () => number;
  /** Tests: a faster heartbeat of the downlink. */
  downlinkHeartbeatMs?: number;
  /** DNS for the address check of both connections (tests). */
  resolve?: AddressPolicy['resolve'];
}

/**
 * Where the site may connect for its upstream (README "Security", "Outbound connections"): a
 * public address or loopback; a LAN address only with SYNC_ALLOW_PRIVATE_NETWORK=true. Checked
 * on every connection of the pushes and the downlink (src/http/guarded-fetch.ts).
 */
export function upstreamAddressPolicy(deps: Pick<SyncActorDeps, 'config' | 'resolve'>): AddressPolicy {
  return {
    allowLoopback: true,
    allowPrivateNetwork: deps.config.allowPrivateNetwork ?? false,
    setting: 'SYNC_ALLOW_PRIVATE_NETWORK',
    ...(deps.resolve ? { resolve: deps.resolve } : {}),
  };
}

type CycleOutcome = 'idle' | 'unavailable' | 'refused' | 'stopped';

/** A batch ready to POST: read, gzip'd and signed (while the batch before was in flight). */
interface PreparedBatch {
  batch: OutboxBatch;
  gzipped: Buffer;
  /** Signed with the clock of when it was prepared; signed again if that turns out wrong. */
  token: string;
}

/** The gzip'd batch is over the upstream's limit: read fewer records. */
interface OversizeBatch {
  oversize: OutboxBatch;
}

/** A batch POSTed, its answer not handled yet. */
interface InFlight {
  prepared: PreparedBatch;
  /** Another batch was in flight before it when it was sent. */
  behind: boolean;
  sentAt: number;
  response: Promise<UpstreamResponse>;
}

/**
 * Batches in flight at once. Two: while the upstream applies one (PostgreSQL's work), it
 * receives, inflates, parses and checks the next (its own), which then waits for the site's lock.
 */
const PIPELINE_DEPTH = 2;
/** Readings arriving without a pause are pushed at least this often. */
export const READINGS_MAX_WAIT_MS = 30_000;
/** A cycle's first batch is at most 1/RAMP_STEPS of SYNC_BATCH_MAX_BYTES (at least RAMP_MIN_BYTES). */
const RAMP_STEPS = 8;
const RAMP_MIN_BYTES = 64 * 1024;

interface UpstreamResponse {
  status: number;
  body: unknown;
  headers: Headers;
}

export class SyncPushActor extends Actor {
  readonly name = 'sync';
  override readonly dependsOn = ['store'];
  /** Sync is a nice-to-have for a site: failing past its budget disables it, never the hub. */
  override readonly required = false;

  private outbox: Outbox | undefined;
  private clock: SyncClock | undefined;
  private downlink: DownlinkClient | undefined;
  private downlinkState: DownlinkState = 'disconnected';
  private stopping = new AbortController();
  private loop: Promise<void> | undefined;
  private budgetTimer: NodeJS.Timeout | undefined;
  private stopRender: (() => void) | undefined;
  private batchRecords: number;
  /** JSON bytes of the next batch read (the ramp to batchMaxBytes; see prepare). */
  private rampBytes = 0;
  /** The first request for a prompt push (texts, statuses) not yet served by a cycle. */
  private fastSince: number | undefined;
  /** The first and the last readings (or node updates) not yet served by a cycle. */
  private readingsSince: number | undefined;
  private readingsLast = 0;
  private waiter: { wakeable: boolean; resolve: (why: 'timer' | 'wake') => void } | undefined;
  private debounce: NodeJS.Timeout | undefined;
  /** The outbox's last sequence number when the running cycle began: it pushes up to there. */
  private cycleTarget = 0;
  private readonly now: () => number;
  /** The upstream's HTTP client: every connection's address is checked (upstreamAddressPolicy). */
  private readonly http: GuardedFetch;

  constructor(private readonly deps: SyncActorDeps) {
    super();
    this.http = guardedFetch(upstreamAddressPolicy(deps));
    this.batchRecords = deps.config.batchMaxRecords;
    this.now = deps.now ?? Date.now;
  }

  async start(): Promise<void> {
    const { deps } = this;
    enableOutbox(deps.db);
    const outbox = new Outbox(deps.db, { now: this.now });
    this.outbox = outbox;
    const offset = Number(outbox.getState(SYNC_STATE.clockOffsetMs) ?? 0);
    this.clock = new SyncClock(
      (ms) => outbox.setState(SYNC_STATE.clockOffsetMs, String(ms)),
      Number.isFinite(offset) ? offset : 0,
      this.now,
    );
    this.stopping = new AbortController();
    this.fastSince = Date.now();
    this.batchRecords = deps.config.batchMaxRecords;
    this.stopRender = deps.metrics.watchOutbox(() => outbox.stats(), this.now);
    // Readings, and the node updates that come with nearly every packet heard, can wait a little
    // to go up in larger batches; texts and their statuses go up at once.
    for (const event of ['reading.stored', 'node.updated'] as const) {
      deps.bus.on(this.name, event, () => this.requestWake('readings'));
    }
    for (const event of ['message.updated', 'billing.changed'] as const) {
      deps.bus.on(this.name, event, () => this.requestWake('prompt'));
    }
    this.budgetTimer = setInterval(() => this.enforceBudget(), BUDGET_INTERVAL_MS);
    this.downlink = new DownlinkClient({
      upstream: deps.config.upstream,
      siteId: deps.config.siteId,
      signer: deps.signer,
      clock: this.clock,
      applier: new DownlinkApplier({ db: deps.db, hubNodeId: () => this.hubNodeId(), now: this.now }),
      bus: deps.bus,
      metrics: deps.metrics,
      log: deps.log,
      retryMaxMs: deps.config.retryMaxMs,
      addressPolicy: upstreamAddressPolicy(deps),
      onState: (state) => this.onDownlinkState(state),
      // A subscription or user command has no bus event of its own: its records go up now too.
      onApplied: () => this.requestWake('prompt'),
      ...(deps.downlinkHeartbeatMs ? { heartbeatMs: deps.downlinkHeartbeatMs } : {}),
    });
    this.downlink.start();
    deps.log.info(
      { upstream: redactedUrl(deps.config.upstream), site: deps.config.siteId, ackedSeq: outbox.ackedSeq() },
      'sync starting',
    );
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.deps.bus.removeOwner(this.name);
    this.stopping.abort();
    clearInterval(this.budgetTimer);
    clearTimeout(this.debounce);
    this.waiter?.resolve('wake');
    this.stopRender?.();
    this.stopRender = undefined;
    await Promise.all([this.loop, this.downlink?.stop()]);
    this.loop = undefined;
    this.downlink = undefined;
    await this.http.close();
  }

  /** Offline is normal for a site: the actor is ready as long as it runs. */
  override ready(): boolean {
    return true;
  }

  override describe(): Record<string, unknown> {
    const { config } = this.deps;
    let outbox = this.outbox;
    let stats: OutboxStats | undefined;
    try {
      stats = outbox?.stats();
    } catch {
      // /health must answer even while the store is closing.
      outbox = undefined;
    }
    const iso = (value: string | undefined) => {
      const ms = Number(value);
      return value !== undefined && Number.isFinite(ms) ? new Date(ms).toISOString() : null;
    };
    return {
      sync: {
        upstream: redactedUrl(config.upstream),
        site_id: config.siteId,
        acked_seq: stats?.ackedSeq ?? null,
        outbox_depth: stats?.depth ?? null,
        lag_s: stats ? lagSeconds(stats.oldestAt, this.now()) : null,
        last_success: iso(outbox?.getState(SYNC_STATE.lastSuccessAt)),
        last_error: outbox?.getState(SYNC_STATE.lastError) ?? null,
        last_error_at: iso(outbox?.getState(SYNC_STATE.lastErrorAt)),
        downlink: this.downlinkState,
        downlink_error: this.downlink?.lastProblem ?? null,
      },
    };
  }

  /** The hub radio's node id, from the retained radio status. */
  private hubNodeId(): string | null {
    const num = this.deps.bus.last('radio.status')?.myNodeNum;
    return num === undefined ? null : nodeIdFromNum(num);
  }

  private onDownlinkState(state: DownlinkState): void {
    this.downlinkState = state;
    if (state === 'stopped' || !this.outbox) return;
    try {
      this.outbox.setState(SYNC_STATE.downlinkState, state);
      this.outbox.setState(SYNC_STATE.downlinkStateAt, String(this.now()));
    } catch (error) {
      this.deps.log.warn({ err: error }, 'could not record the downlink state');
    }
  }

  /**
   * New outbox entries. 'prompt' (a text, a status, a subscription): pushed WAKE_DEBOUNCE_MS after
   * the first of them. 'readings' (readings, node updates): pushed once none has come for
   * SYNC_READINGS_DEBOUNCE, and at the latest READINGS_MAX_WAIT_MS after the first of them: a
   * burst of ingest is pushed after it, in a few large batches, rather than during it
   * (BENCHMARKS.md "Issue 12": the hub's ingest comes first).
   */
  private requestWake(kind: 'prompt' | 'readings'): void {
    const now = Date.now();
    if (kind === 'prompt') this.fastSince ??= now;
    else {
      this.readingsSince ??= now;
      this.readingsLast = now;
    }
    // A timer already set looks again when it fires (readings move it later, never earlier).
    if (this.waiter?.wakeable && (!this.debounce || kind === 'prompt')) this.scheduleWake();
  }

  /** When the entries waiting are due to be pushed (local ms); undefined when none waits. */
  private wakeDue(): number | undefined {
    return wakeDueAt(
      { promptSince: this.fastSince, readingsSince: this.readingsSince, readingsLast: this.readingsLast },
      this.deps.config.readingsDebounceMs,
    );
  }

  private scheduleWake(): void {
    clearTimeout(this.debounce);
    this.debounce = undefined;
    const due = this.wakeDue();
    if (due === undefined) return;
    this.debounce = setTimeout(
      () => {
        this.debounce = undefined;
        const again = this.wakeDue();
        // Readings came meanwhile: their quiet period starts again.
        if (again !== undefined && again > Date.now()) this.scheduleWake();
        else this.waiter?.resolve('wake');
      },
      Math.max(0, due - Date.now()),
    );
  }

  /** Waits `ms`, or less when woken (new entries, when `wakeable`) or stopped. */
  private wait(ms: number, wakeable: boolean): Promise<'timer' | 'wake'> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => done('timer'), ms);
      const done = (why: 'timer' | 'wake') => {
        clearTimeout(timer);
        clearTimeout(this.debounce);
        this.debounce = undefined;
        this.waiter = undefined;
        resolve(why);
      };
      this.waiter = { wakeable, resolve: done };
      if (this.stopping.signal.aborted) done('wake');
      else if (wakeable) this.scheduleWake();
    });
  }

  private async run(): Promise<void> {
    const { config, log } = this.deps;
    let failures = 0;
    let probe = true;
    while (!this.stopping.signal.aborted) {
      // This cycle pushes what is there now: what comes meanwhile asks for the next one.
      this.fastSince = undefined;
      this.readingsSince = undefined;
      let outcome: CycleOutcome;
      try {
        outcome = await this.cycle(probe);
      } catch (error) {
        // Storage failures (SQLite) are the actor's to crash on; the supervisor restarts it.
        if (this.stopping.signal.aborted) return;
        log.error({ err: error }, 'sync cycle failed');
        this.crash(error);
        return;
      }
      this.enforceBudget();
      if (outcome === 'stopped' || this.stopping.signal.aborted) return;
      let delay: number;
      if (outcome === 'idle') {
        failures = 0;
        delay = IDLE_PROBE_MS;
      } else {
        failures++;
        delay =
          outcome === 'refused' ? config.retryMaxMs : Math.max(retryDelay(failures, config.retryMaxMs), 50);
      }
      const why = await this.wait(delay, outcome === 'idle');
      // Woken by new entries on a link that just worked: push at once; otherwise probe first.
      probe = outcome !== 'idle' || why === 'timer';
    }
  }

  /**
   * One probe (when asked) and as many batches as the outbox holds: PIPELINE_DEPTH requests in
   * flight, in order, and the batch after them read, gzip'd and signed meanwhile.
   */
  private async cycle(probe: boolean): Promise<CycleOutcome> {
    const inFlight: InFlight[] = [];
    let next: Promise<PreparedBatch | OversizeBatch | undefined> | undefined;
    try {
      if (probe) await this.ping();
      const outbox = this.outbox!;
      // Up to what is there now: a steady stream of readings is pushed in rounds, not forever.
      this.cycleTarget = outbox.lastSeq();
      this.rampBytes = Math.max(RAMP_MIN_BYTES, this.deps.config.batchMaxBytes / RAMP_STEPS);
      next = this.prepare(outbox.ackedSeq());
      for (;;) {
        if (this.stopping.signal.aborted) return 'stopped';
        // Fill the pipeline; the batch after the last one sent is prepared while they fly.
        while (inFlight.length < PIPELINE_DEPTH && next) {
          const prepared = await next;
          next = undefined;
          if (!prepared || this.stopping.signal.aborted) break;
          const last = inFlight[inFlight.length - 1];
          if ('oversize' in prepared) {
            if (last) break; // made smaller once the requests in flight are answered
            this.smaller(prepared.oversize);
          } else if (
            prepared.batch.firstSeq ===
            (last ? last.prepared.batch.lastSeq : outbox.ackedSeq()) + 1
          ) {
            inFlight.push(this.post(prepared, last !== undefined));
            next = this.prepare(prepared.batch.lastSeq);
            continue;
          } else if (last) {
            break; // prepared before the cursor moved: read again once these are answered
          }
          next = this.prepare(outbox.ackedSeq());
        }
        const head = inFlight.shift();
        if (!head) return this.stopping.signal.aborted ? 'stopped' : 'idle';
        if ((await this.answered(head)) === 'moved') {
          // The cursor moved elsewhere (adopted, or a batch sent ahead found a gap): what is in
          // flight is answered, then the outbox is read again from the cursor.
          await this.settle(inFlight.splice(0));
          await next?.catch(() => undefined);
          next = undefined;
        }
        next ??= this.prepare(inFlight[inFlight.length - 1]?.prepared.batch.lastSeq ?? outbox.ackedSeq());
      }
    } catch (error) {
      // The head failed: a later request may still have been applied (the head's answer was
      // lost on the way, say); its acknowledgement counts, its failure does not.
      await this.settle(inFlight.splice(0));
      if (this.stopping.signal.aborted) return 'stopped';
      if (error instanceof UpstreamRefusal) {
        this.deps.metrics.rejects.inc({ reason: error.reason });
        this.recordError(error.message, 'warn');
        return 'refused';
      }
      if (error instanceof UpstreamUnavailable) {
        this.recordError(error.message, 'info');
        return 'unavailable';
      }
      throw error;
    } finally {
      // A preparation still running finishes before the next cycle reads the outbox again.
      await next?.catch(() => undefined);
    }
  }

  /** Sends a prepared batch; `behind`: another batch of ours is in flight before it. */
  private post(prepared: PreparedBatch, behind: boolean): InFlight {
    const sentAt = this.now();
    const response = this.request('POST', '/batches', prepared.gzipped, BATCH_TIMEOUT_MS, prepared.token);
    // Awaited in order by the cycle; never an unhandled rejection meanwhile.
    response.catch(() => {});
    return { prepared, behind, sentAt, response };
  }

  /** Answers of requests that no longer lead: a 200 still acknowledges, anything else is moot. */
  private async settle(requests: InFlight[]): Promise<void> {
    for (const request of requests) {
      try {
        const res = await request.response;
        if (res.status === 200) this.onBatchAck(request, res);
      } catch {
        // moot: the cycle goes by the head's outcome
      }
    }
  }

  /**
   * The batch after `after`, read, gzip'd and signed; undefined when the outbox holds nothing
   * more. The outbox is read synchronously, before the first await.
   */
  private async prepare(after: number): Promise<PreparedBatch | OversizeBatch | undefined> {
    const { config } = this.deps;
    if (after >= this.cycleTarget) return undefined;
    // The first batches of a cycle are small, then each twice the one before up to the limit:
    // the upstream starts on the first sooner, and is busy with it while the next are read.
    const maxBytes = Math.min(config.batchMaxBytes, this.rampBytes);
    const batch = this.outbox!.readBatch({
      maxRecords: this.batchRecords,
      maxBytes,
      after,
      upTo: this.cycleTarget,
    });
    if (!batch) return undefined;
    this.rampBytes = Math.min(config.batchMaxBytes, this.rampBytes * 2);
    const head = {
      protocol: SYNC_PROTOCOL_VERSION,
      site_id: config.siteId,
      first_seq: batch.firstSeq,
      last_seq: batch.lastSeq,
      dropped: batch.dropped,
      sent_at: this.now(),
    };
    const problem = batchCoverageProblem({ ...head, records: batch.records });
    if (problem) {
      // The outbox handed out a batch that does not add up: sending it would be refused anyway.
      throw new UpstreamRefusal(0, 'local_batch', `the outbox produced an inconsistent batch: ${problem}`);
    }
    // The records' JSON comes from the outbox as stored: spliced in, not encoded again.
    const json = `${JSON.stringify(head).slice(0, -1)},"records":${batch.recordsJson}}`;
    const gzipped = await gzipAsync(Buffer.from(json), { level: GZIP_LEVEL });
    if (gzipped.length > MAX_BATCH_BYTES) {
      if (batch.records.length <= 1) {
        throw new UpstreamRefusal(413, 'too_large', `outbox entry ${batch.firstSeq} is too large to send`);
      }
      return { oversize: batch };
    }
    const token = await this.sign('POST', '/batches', gzipped);
    return { batch, gzipped, token };
  }

  /** Reads fewer records per batch from now on (a batch was over the upstream's size limit). */
  private smaller(batch: OutboxBatch): void {
    this.batchRecords = Math.max(1, Math.floor(batch.records.length / 2));
    this.deps.log.info(
      { records: this.batchRecords },
      'batch over the upstream size limit; sending smaller batches',
    );
  }

  private async ping(): Promise<void> {
    const sentAt = this.now();
    const res = await this.request('GET', '/ping', undefined, PING_TIMEOUT_MS);
    const receivedAt = this.now();
    if (res.status !== 200) throw this.failure(res);
    const answer = parseAnswer(pingAnswerSchema, res.body, 'ping');
    this.checkSite(answer);
    this.clock!.observe(answer.server_time, sentAt, receivedAt);
    this.adopt(answer.acked_seq, 'the upstream already holds');
    this.recordSuccess();
  }

  /**
   * The answer to the batch at the head of the pipeline: 'ok' (acknowledged), 'moved' (the
   * cursor is elsewhere now: adopted, or a batch sent ahead found the gap its predecessor had
   * not closed yet), or throws the failure.
   */
  private async answered(request: InFlight): Promise<'ok' | 'moved'> {
    const { metrics } = this.deps;
    const { batch } = request.prepared;
    const res = await request.response;
    if (res.status === 200) {
      this.onBatchAck(request, res);
      return 'ok';
    }
    const failure = this.failure(res);
    if (failure instanceof UpstreamRefusal && failure.status === 409 && failure.expectedSeq !== undefined) {
      const acked = this.outbox!.ackedSeq();
      if (failure.expectedSeq - 1 > acked) {
        // The upstream holds more than we knew (an ack lost in flight): go on from its cursor.
        metrics.rejects.inc({ reason: failure.reason });
        this.adopt(failure.expectedSeq - 1, `the upstream expects ${failure.expectedSeq} next;`);
        return 'moved';
      }
      // Sent while the batch before it was in flight, it reached the upstream (another process
      // of it, say) before that one was applied: sent again, now that it leads (the one before
      // it was answered 200 first, or this answer would not be read).
      if (request.behind && failure.reason === 'gap') return 'moved';
    }
    if (failure instanceof UpstreamRefusal && failure.status === 413) this.smaller(batch);
    throw failure;
  }

  /** A 200 to a batch: acknowledged, counted, the clock observed. */
  private onBatchAck(request: InFlight, res: UpstreamResponse): void {
    const { metrics } = this.deps;
    const { batch } = request.prepared;
    const ack = parseAnswer(batchAckSchema, res.body, 'batch');
    this.checkSite(ack);
    this.clock!.observe(ack.server_time, request.sentAt, this.now());
    this.acknowledged(ack, batch);
    metrics.batchesSent.inc();
    // Outbox entries sent (a merged readings record counts each of its entries).
    metrics.recordsSent.inc(batch.records.reduce((n, r) => n + recordEntries(r), 0));
    this.recordSuccess();
  }

  private acknowledged(ack: BatchAck, batch: OutboxBatch): void {
    const upTo = Math.min(ack.acked_seq, batch.lastSeq);
    if (upTo > this.outbox!.ackedSeq()) this.outbox!.acknowledge(upTo);
    if (ack.acked_seq > batch.lastSeq) this.adopt(ack.acked_seq, 'the upstream acknowledged');
  }

  /** Takes the upstream's cursor when it is ahead of ours (never past what the outbox numbered). */
  private adopt(seq: number, why: string): void {
    const outbox = this.outbox!;
    const ours = outbox.ackedSeq();
    if (seq <= ours) return;
    const last = outbox.lastSeq();
    if (seq > last) {
      // The upstream holds sequence numbers this site never wrote: its database is not ours
      // (a site restored from an old backup, or two sites under one id). Nothing sent can fix it.
      throw new UpstreamRefusal(
        409,
        'sequence_ahead',
        `${why} up to ${seq}, but this site has numbered only up to ${last} (restored from a backup, or a site id used twice?)`,
      );
    }
    this.deps.log.info({ from: ours, to: seq }, `${why} up to ${seq}; adopting its cursor`);
    outbox.acknowledge(seq);
  }

  private checkSite(answer: PingAnswer | BatchAck): void {
    if (answer.site_id !== this.deps.config.siteId) {
      throw new UpstreamRefusal(
        403,
        'site_mismatch',
        `the upstream answered for site "${answer.site_id}", not "${this.deps.config.siteId}"`,
      );
    }
  }

  /**
   * One signed request (`token`: signed already, for attempt one); a refusal whose Date header
   * shows our clock off is retried once, signed again with the corrected clock.
   */
  private async request(
    method: 'GET' | 'POST',
    suffix: string,
    body: Buffer | undefined,
    timeoutMs: number,
    token?: string,
  ): Promise<UpstreamResponse> {
    for (let attempt = 0; ; attempt++) {
      const sentAt = this.now();
      const signed = attempt === 0 && token !== undefined ? token : await this.sign(method, suffix, body);
      const res = await this.send(method, suffix, body, timeoutMs, signed);
      if (res.status === 401 && attempt === 0) {
        const serverTime = serverTimeOf(res.body, res.headers.get('date'));
        if (serverTime !== undefined && this.clock!.correct(serverTime, sentAt, this.now())) {
          this.deps.log.info(
            { offsetMs: this.clock!.offset },
            'site clock is off; corrected from the upstream',
          );
          continue;
        }
      }
      return res;
    }
  }

  /** A site request token for this request, with the corrected clock. */
  private sign(method: 'GET' | 'POST', suffix: string, body: Buffer | undefined): Promise<string> {
    const { config, signer } = this.deps;
    return signSiteRequest(signer, {
      siteId: config.siteId,
      method,
      // The protocol's path, whatever prefix a reverse proxy in front of the upstream adds.
      path: `${SYNC_API}${suffix}`,
      nowMs: this.clock!.now(),
      ...(body ? { body } : {}),
    });
  }

  private async send(
    method: 'GET' | 'POST',
    suffix: string,
    body: Buffer | undefined,
    timeoutMs: number,
    token: string,
  ): Promise<UpstreamResponse> {
    const { config } = this.deps;
    const url = upstreamEndpoint(config.upstream, `${SYNC_API}${suffix}`);
    let res: Response;
    try {
      res = await this.http(url, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/json',
          ...(body ? { 'content-type': 'application/json', 'content-encoding': 'gzip' } : {}),
        },
        ...(body ? { body } : {}),
        redirect: 'error',
        signal: AbortSignal.any([this.stopping.signal, AbortSignal.timeout(timeoutMs)]),
      });
    } catch (error) {
      throw new UpstreamUnavailable(`${method} ${url.pathname}: ${networkReason(error, timeoutMs)}`);
    }
    let text: string;
    try {
      text = await res.text();
    } catch (error) {
      throw new UpstreamUnavailable(`${method} ${url.pathname}: ${networkReason(error, timeoutMs)}`);
    }
    // A refusal's problem document is small; a large error page is not read as one.
    const readable = text !== '' && (res.status === 200 || text.length <= MAX_PROBLEM_BYTES);
    let parsed: unknown;
    try {
      parsed = readable ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, body: parsed, headers: res.headers };
  }

  /** The error an answer other than 200 stands for. */
  private failure(res: UpstreamResponse): UpstreamRefusal | UpstreamUnavailable {
    if (res.status >= 500 || res.status < 400 || res.status === 408 || res.status === 429) {
      return new UpstreamUnavailable(`the upstream answered HTTP ${res.status}`);
    }
    const problem = isRecord(res.body) ? res.body : {};
    const type = typeof problem.type === 'string' ? problem.type : '';
    const reason = /^urn:meshhub:sync:([a-z_]+)$/.exec(type)?.[1] ?? `http_${res.status}`;
    const title = typeof problem.title === 'string' ? problem.title : `HTTP ${res.status}`;
    const detail = typeof problem.detail === 'string' ? `: ${problem.detail}` : '';
    const expected = problem.expected_seq;
    return new UpstreamRefusal(
      res.status,
      reason,
      `the upstream refused (${res.status} ${reason}): ${title}${detail}`,
      typeof expected === 'number' && Number.isSafeInteger(expected) ? expected : undefined,
    );
  }

  private recordSuccess(): void {
    this.outbox!.setState(SYNC_STATE.lastSuccessAt, String(this.now()));
  }

  private recordError(message: string, level: 'info' | 'warn'): void {
    const outbox = this.outbox!;
    const previous = outbox.getState(SYNC_STATE.lastError);
    outbox.setState(SYNC_STATE.lastError, message.slice(0, 1000));
    outbox.setState(SYNC_STATE.lastErrorAt, String(this.now()));
    // The same failure again (the upstream down for an hour) is logged once, not every retry.
    if (previous !== message) this.deps.log[level]({ reason: message }, 'sync push failed; will retry');
  }

  private enforceBudget(): void {
    const outbox = this.outbox;
    if (!outbox) return;
    try {
      const dropped = outbox.enforceBudget(this.deps.config.outboxMaxBytes);
      if (dropped > 0) {
        this.deps.log.warn(
          { dropped, maxBytes: this.deps.config.outboxMaxBytes },
          'outbox over its disk budget; oldest raw readings dropped (their rollups still sync)',
        );
      }
    } catch (error) {
      this.deps.log.error({ err: error }, 'outbox budget check failed');
    }
  }
}

/** What waits to be pushed: the first prompt request, the first and last readings since the last cycle. */
export interface PendingWakes {
  promptSince: number | undefined;
  readingsSince: number | undefined;
  readingsLast: number;
}

/**
 * When a push is due (ms), undefined when nothing waits: WAKE_DEBOUNCE_MS after the first prompt
 * request; for readings, once none came for `readingsDebounceMs`, and at the latest
 * READINGS_MAX_WAIT_MS (or the debounce, when longer) after the first of them.
 */
export function wakeDueAt(pending: PendingWakes, readingsDebounceMs: number): number | undefined {
  let due = pending.promptSince === undefined ? undefined : pending.promptSince + WAKE_DEBOUNCE_MS;
  if (pending.readingsSince !== undefined) {
    const readings = Math.min(
      pending.readingsLast + readingsDebounceMs,
      pending.readingsSince + Math.max(READINGS_MAX_WAIT_MS, readingsDebounceMs),
    );
    due = due === undefined ? readings : Math.min(due, readings);
  }
  return due;
}

function parseAnswer<T>(schema: z.ZodType<T>, body: unknown, what: string): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new UpstreamUnavailable(`the upstream's ${what} answer is not the protocol's`);
  return parsed.data;
}

function networkReason(error: unknown, timeoutMs: number): string {
  const e = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError') return `no answer within ${timeoutMs} ms`;
  if (e.name === 'AbortError') return 'aborted';
  const refused = refusedAddressOf(error);
  if (refused) return refused.message;
  return e.cause?.code ?? e.cause?.message ?? e.message ?? String(error);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The upstream URL as shown in logs and /health (it carries no credentials: settings refuse them). */
export function redactedUrl(url: URL): string {
  return `${url.origin}${url.pathname === '/' ? '' : url.pathname}`;
}

export function lagSeconds(oldestAt: number | null, now: number): number {
  return oldestAt === null ? 0 : Math.max(0, Math.round((now - oldestAt) / 1000));
}
