/**
 * Gives memory back once the hub is quiet (issue 17, "memory comes back after load").
 *
 * After start-up (the simulator's replayed history) or a burst of ingest, V8 keeps the heap it
 * grew until its memory reducer runs, which on an idle process takes a minute or more, and
 * SQLite keeps its page cache full. So, when no reading was stored for a whole check period and
 * the resident set grew by more than `growthBytes` above its lowest since the last trim (or at the first quiet
 * check after start), the trimmer runs one full garbage collection and asks SQLite to release
 * its cache (`PRAGMA shrink_memory`; the pages are read again from the OS cache when needed).
 *
 * Node has no public API for a collection without `--expose-gc`, and `npm start` cannot pass
 * flags, so the flag is set at run time and `gc` taken from a fresh context (node:v8 warns that
 * flags set after start may not take effect; when `gc` is not there, only SQLite is trimmed).
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import type { Database } from '../src/store/database.js';

export interface MemoryTrimmerOptions {
  db: Database;
  /** Readings stored so far (any counter that moves while the hub works). */
  activity: () => number;
  /** How often to check; default 10 s. */
  everyMs?: number;
  /** RSS growth since the last trim that makes a quiet hub trim again; default 8 MB. */
  growthBytes?: number;
  onTrim?: (before: number, after: number) => void;
}

let gcFunction: (() => void) | undefined | null = null;

/** A full collection, when the runtime lets us ask for one. */
export function collectGarbage(): boolean {
  if (gcFunction === null) {
    try {
      v8.setFlagsFromString('--expose-gc');
      const found = vm.runInNewContext('typeof gc === "function" ? gc : undefined') as unknown;
      gcFunction = typeof found === 'function' ? (found as () => void) : undefined;
    } catch {
      gcFunction = undefined;
    }
  }
  if (!gcFunction) return false;
  gcFunction();
  return true;
}

export class MemoryTrimmer {
  private timer: NodeJS.Timeout | undefined;
  private lastActivity: number;
  /** The lowest RSS seen since the last trim (undefined right after one: V8 unmaps later). */
  private floor: number | undefined;
  private trimmed = false;

  constructor(private readonly options: MemoryTrimmerOptions) {
    this.lastActivity = options.activity();
  }

  start(): void {
    this.timer ??= setInterval(() => this.check(), this.options.everyMs ?? 10_000);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One check: trims when nothing was stored since the last one and memory grew. */
  check(): boolean {
    const activity = this.options.activity();
    const quiet = activity === this.lastActivity;
    this.lastActivity = activity;
    if (!quiet) return false;
    const rss = process.memoryUsage.rss();
    if (this.floor === undefined || rss < this.floor) this.floor = rss;
    if (this.trimmed && rss < this.floor + (this.options.growthBytes ?? 8_000_000)) return false;
    return this.trim(rss);
  }

  trim(before = process.memoryUsage.rss()): boolean {
    if (this.options.db.open) this.options.db.pragma('shrink_memory');
    collectGarbage();
    // V8 gives the pages back in the background: the next check measures the new floor.
    const after = process.memoryUsage.rss();
    this.trimmed = true;
    this.floor = undefined;
    this.options.onTrim?.(before, after);
    return true;
  }
}
