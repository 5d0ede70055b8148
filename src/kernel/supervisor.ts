/**
 * Starts actors in dependency order, restarts a crashed one with growing delays, gives up past
 * a restart budget, and stops everything in reverse order within a deadline
 * (DESIGN.md "Actors" 5).
 *
 * Giving up on a required actor calls `onGiveUp`: the hub exits non-zero and systemd restarts
 * the process. Giving up on an optional actor (a plugin) disables it; the hub runs on.
 */
import type { Actor, ActorState, KernelLogger } from './actor.js';

export interface RestartPolicy {
  /** Delay before the first restart; doubled for each further one. */
  initialDelayMs: number;
  maxDelayMs: number;
  /** At most this many restarts within `windowMs`; one more gives up. */
  maxRestarts: number;
  windowMs: number;
}

export interface SupervisorOptions {
  log: KernelLogger;
  restart?: Partial<RestartPolicy>;
  /** Bound on each actor's `start()`; a start that hangs counts as a crash. */
  startTimeoutMs?: number;
  /** Bound on the whole reverse-order shutdown. */
  stopDeadlineMs?: number;
  /** Called when a required actor is beyond its restart budget. */
  onGiveUp?: (actor: string, error: unknown) => void;
  /** Called when an actor's listeners must be dropped (before a restart, after a stop). */
  onActorStopped?: (actor: string) => void;
}

export interface ActorStatus {
  name: string;
  state: ActorState;
  required: boolean;
  ready: boolean;
  restarts: number;
  lastError?: string;
  detail: Record<string, unknown>;
}

interface Entry {
  actor: Actor;
  state: ActorState;
  restartTimes: number[];
  restarts: number;
  consecutive: number;
  lastError?: string;
  timer?: NodeJS.Timeout;
}

const DEFAULT_POLICY: RestartPolicy = {
  initialDelayMs: 500,
  maxDelayMs: 30_000,
  maxRestarts: 5,
  windowMs: 60_000,
};

export class DependencyError extends Error {
  override readonly name = 'DependencyError';
}

export class Supervisor {
  private readonly entries = new Map<string, Entry>();
  private order: string[] = [];
  private stopping = false;
  private readonly policy: RestartPolicy;

  constructor(private readonly options: SupervisorOptions) {
    this.policy = { ...DEFAULT_POLICY, ...options.restart };
  }

  add(actor: Actor): this {
    if (this.entries.has(actor.name)) throw new Error(`actor "${actor.name}" is added twice`);
    this.entries.set(actor.name, { actor, state: 'idle', restartTimes: [], restarts: 0, consecutive: 0 });
    actor.attachCrashHandler((error) => this.onCrash(actor.name, error));
    return this;
  }

  get actors(): Actor[] {
    return [...this.entries.values()].map((e) => e.actor);
  }

  /** Dependency order (Kahn's algorithm, ties in insertion order). Throws on unknown or cyclic dependencies. */
  startOrder(): string[] {
    const names = [...this.entries.keys()];
    const pending = new Map<string, Set<string>>();
    for (const name of names) {
      const deps = new Set(this.entries.get(name)!.actor.dependsOn);
      for (const dep of deps) {
        if (!this.entries.has(dep)) throw new DependencyError(`"${name}" depends on unknown actor "${dep}"`);
      }
      pending.set(name, deps);
    }
    const order: string[] = [];
    while (pending.size) {
      const next = [...pending].find(([, deps]) => [...deps].every((d) => order.includes(d)));
      if (!next) throw new DependencyError(`dependency cycle among: ${[...pending.keys()].join(', ')}`);
      order.push(next[0]);
      pending.delete(next[0]);
    }
    return order;
  }

  /**
   * Starts every actor in dependency order. A required actor whose start fails past its
   * restart budget rejects the whole start; an optional one is disabled and skipped.
   */
  async startAll(): Promise<void> {
    this.order = this.startOrder();
    for (const name of this.order) {
      const entry = this.entries.get(name)!;
      const blocked = entry.actor.dependsOn.find((d) => this.entries.get(d)!.state !== 'running');
      if (blocked) {
        this.setState(entry, 'disabled');
        entry.lastError = `dependency "${blocked}" is not running`;
        if (entry.actor.required) throw new DependencyError(`${name}: ${entry.lastError}`);
        continue;
      }
      await this.startWithRetries(entry);
    }
  }

  private async startWithRetries(entry: Entry): Promise<void> {
    for (;;) {
      if (this.stopping) return;
      try {
        await this.startOnce(entry);
        return;
      } catch (error) {
        const delay = this.recordFailure(entry, error);
        if (delay === undefined) {
          if (entry.actor.required) throw error;
          return;
        }
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  private async startOnce(entry: Entry): Promise<void> {
    this.setState(entry, 'starting');
    const timeoutMs = this.options.startTimeoutMs ?? 30_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        entry.actor.start(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`start did not finish within ${timeoutMs} ms`)),
            timeoutMs,
          );
        }),
      ]);
    } catch (error) {
      await this.stopQuietly(entry);
      throw error;
    } finally {
      clearTimeout(timer);
    }
    this.setState(entry, 'running');
    entry.consecutive = 0;
  }

  /** Records a failure; returns the delay before the next try, or undefined when the budget is spent. */
  private recordFailure(entry: Entry, error: unknown): number | undefined {
    const now = Date.now();
    entry.lastError = error instanceof Error ? error.message : String(error);
    entry.restartTimes = entry.restartTimes.filter((t) => now - t < this.policy.windowMs);
    if (entry.restartTimes.length >= this.policy.maxRestarts) {
      const name = entry.actor.name;
      if (entry.actor.required) {
        this.setState(entry, 'failed');
        this.options.log.error(
          { actor: name, err: error },
          'actor failed past its restart budget; giving up',
        );
        this.options.onGiveUp?.(name, error);
      } else {
        this.setState(entry, 'disabled');
        this.options.log.error(
          { actor: name, err: error },
          'optional actor failed past its restart budget; disabled',
        );
      }
      return undefined;
    }
    entry.restartTimes.push(now);
    entry.restarts++;
    const delay = Math.min(this.policy.initialDelayMs * 2 ** entry.consecutive, this.policy.maxDelayMs);
    entry.consecutive++;
    this.setState(entry, 'restarting');
    this.options.log.warn(
      { actor: entry.actor.name, err: error, delayMs: delay },
      'actor crashed; restarting',
    );
    return delay;
  }

  private onCrash(name: string, error: unknown): void {
    const entry = this.entries.get(name);
    if (!entry || this.stopping) return;
    if (entry.state !== 'running' && entry.state !== 'starting') return; // already handling a crash
    const delay = this.recordFailure(entry, error);
    void this.stopQuietly(entry).then(() => {
      if (delay === undefined || this.stopping) return;
      entry.timer = setTimeout(() => {
        entry.timer = undefined;
        this.startWithRetries(entry).catch((err: unknown) => {
          // Only a required actor past its budget lands here; onGiveUp was already called.
          this.options.log.error({ actor: name, err }, 'restart abandoned');
        });
      }, delay);
    });
  }

  private async stopQuietly(entry: Entry, deadlineMs = 5_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        entry.actor.stop(),
        new Promise<void>((resolve) => {
          timer = setTimeout(() => {
            this.options.log.warn(
              { actor: entry.actor.name, deadlineMs },
              'stop did not finish before its deadline',
            );
            resolve();
          }, deadlineMs);
        }),
      ]);
    } catch (error) {
      this.options.log.warn({ actor: entry.actor.name, err: error }, 'stop failed');
    } finally {
      clearTimeout(timer);
      this.options.onActorStopped?.(entry.actor.name);
    }
  }

  /** Stops every actor in reverse start order; the whole shutdown is bounded by `stopDeadlineMs`. */
  async stopAll(): Promise<void> {
    this.stopping = true;
    const deadline = Date.now() + (this.options.stopDeadlineMs ?? 4_000);
    const order = (this.order.length ? this.order : [...this.entries.keys()]).slice().reverse();
    for (const name of order) {
      const entry = this.entries.get(name)!;
      clearTimeout(entry.timer);
      if (
        entry.state === 'idle' ||
        entry.state === 'stopped' ||
        entry.state === 'disabled' ||
        entry.state === 'failed'
      ) {
        continue;
      }
      this.setState(entry, 'stopping');
      await this.stopQuietly(entry, Math.max(50, deadline - Date.now()));
      this.setState(entry, 'stopped');
    }
  }

  status(): ActorStatus[] {
    return [...this.entries.values()].map((e) => ({
      name: e.actor.name,
      state: e.state,
      required: e.actor.required,
      ready: e.state === 'running' && e.actor.ready(),
      restarts: e.restarts,
      ...(e.lastError === undefined ? {} : { lastError: e.lastError }),
      detail: e.actor.describe(),
    }));
  }

  private setState(entry: Entry, state: ActorState): void {
    entry.state = state;
  }
}
