/**
 * Writes every `mesh.heard` sighting into the packet log in batches (src/kernel/group-commit.ts,
 * deferred: one transaction per PACKET_LOG_BATCH_ROWS rows or per `batchDelayMs`, never one per
 * packet), trimming to the row cap in the same transaction and to the day bound once a minute.
 * A failed write is logged and the hub goes on: the log is a window on the mesh, not a record
 * anyone is owed.
 */
import type { HubBus } from '../domain/events.js';
import { Actor, type KernelLogger } from '../kernel/actor.js';
import { GroupCommit } from '../kernel/group-commit.js';
import type { Database } from '../store/database.js';
import { type PacketBounds, PacketLogStore, type PacketSighting, sightingOf } from './store.js';

/** Rows a transaction takes at most before it is handed over at once. */
export const PACKET_LOG_BATCH_ROWS = 1_000;
const DAY_TRIM_EVERY_MS = 60_000;

export interface PacketLogCounters {
  written(rows: number): void;
  trimmed(rows: number): void;
}

export interface PacketLogWriterDeps {
  bus: HubBus;
  db: Database;
  log: KernelLogger;
  bounds: PacketBounds;
  counters: PacketLogCounters;
  /** Told after each commit: the sightings it wrote, the first numbered `firstId`, the rest in order (the live tail). */
  onWritten?: (sightings: readonly PacketSighting[], firstId: number) => void;
  now?: () => number;
  /** The longest a sighting waits before its batch is written. Default 250 ms. */
  batchDelayMs?: number;
}

export class PacketLogWriter extends Actor {
  readonly name = 'packet-log';
  override readonly dependsOn = ['store'];
  override readonly required = false;
  private store: PacketLogStore | undefined;
  private pending = 0;
  private lastDayTrim = 0;
  private dayTimer: NodeJS.Timeout | undefined;
  private readonly now: () => number;
  private readonly commits: GroupCommit<PacketSighting>;

  constructor(private readonly deps: PacketLogWriterDeps) {
    super();
    this.now = deps.now ?? Date.now;
    this.commits = new GroupCommit<PacketSighting>({
      commit: (rows) => this.commit(rows),
      deferLimitMs: deps.batchDelayMs ?? 250,
    });
  }

  async start(): Promise<void> {
    this.store = new PacketLogStore(this.deps.db);
    this.trimDays();
    // A quiet mesh writes nothing, yet its old rows must still go.
    this.dayTimer = setInterval(() => this.trimDays(), DAY_TRIM_EVERY_MS);
    this.dayTimer.unref();
    this.deps.bus.on(this.name, 'mesh.heard', ({ packet, via, duplicate }) => {
      this.pending++;
      void this.commits.submitAll([sightingOf(packet, via, duplicate, this.now())], { defer: true });
      if (this.pending >= PACKET_LOG_BATCH_ROWS) this.commits.commitSoon();
    });
  }

  async stop(): Promise<void> {
    this.deps.bus.removeOwner(this.name);
    clearInterval(this.dayTimer);
    await this.flush();
  }

  /** The log's table, once started (the routes read it). */
  get packets(): PacketLogStore | undefined {
    return this.store;
  }

  /** Writes what waits now; resolves once it is committed. */
  flush(): Promise<void> {
    return this.commits.submitAll([]).catch(() => undefined);
  }

  private commit(rows: PacketSighting[]): void {
    this.pending = Math.max(0, this.pending - rows.length);
    const store = this.store;
    if (!store || rows.length === 0) return;
    let firstId: number;
    try {
      const result = store.write(rows, this.deps.bounds.maxRows);
      firstId = result.firstId;
      this.deps.counters.written(rows.length);
      if (result.trimmed > 0) this.deps.counters.trimmed(result.trimmed);
      if (this.now() - this.lastDayTrim >= DAY_TRIM_EVERY_MS) this.trimDays();
    } catch (error) {
      this.deps.log.error({ err: error, rows: rows.length }, 'packet log: a batch could not be written');
      return;
    }
    try {
      this.deps.onWritten?.(rows, firstId);
    } catch (error) {
      this.deps.log.error({ err: error }, 'packet log: a listener failed');
    }
  }

  private trimDays(): void {
    const store = this.store;
    if (!store) return;
    this.lastDayTrim = this.now();
    try {
      const trimmed = store.trimOlderThan(this.now() - this.deps.bounds.maxAgeMs);
      if (trimmed > 0) this.deps.counters.trimmed(trimmed);
    } catch (error) {
      this.deps.log.error({ err: error }, 'packet log: old rows could not be trimmed');
    }
  }
}
