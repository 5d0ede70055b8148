/**
 * Starts actors in dependency order, restarts a crashed one with growing delays, gives up past
 * a restart budget, and stops everything in reverse order within a deadline
 * (docs/architecture.md "Actors" 5).
 *
 * Giving up on a required actor calls `onGiveUp`: the hub exits non-zero and systemd restarts
 * the process. A start that fails with a StartupFailure (a taken port) is not retried: the
 * whole start fails at once, whether the actor is required or not. Giving up on an optional actor (a plugin) disables it; the hub runs on.
 */
import type { Actor, ActorState, KernelLogger } from './actor.js';
import { exponentialDelay } from './backoff.js';
import { StartupFailure } from './startup-failure.js';
import { pause, withTimeout } from './timing.js';

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
  /** Called on every change of an actor's state (tests wait on it; health could log it). */
  onStateChange?: (actor: string, state: ActorState) => void;
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

class StopDeadlineError extends Error {}

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
        // The operator's to fix (a taken port): retrying cannot help, and no actor may do without it.
        if (error instanceof StartupFailure) {
          entry.lastError = error.message;
          this.setState(entry, 'failed');
          throw error;
        }
        const delay = this.recordFailure(entry, error);
        if (delay === undefined) {
          if (entry.actor.required) throw error;
          return;
        }
        await pause(delay);
      }
    }
  }

  private async startOnce(entry: Entry): Promise<void> {
    this.setState(entry, 'starting');
    const timeoutMs = this.options.startTimeoutMs ?? 30_000;
    try {
      await withTimeout(
        entry.actor.start(),
        timeoutMs,
        () => new Error(`start did not finish within ${timeoutMs} ms`),
      );
    } catch (error) {
      await this.stopQuietly(entry);
      throw error;
    }
    this.setState(entry, 'running');
    entry.consecutive = 0;
  }

  /** Records a failure; returns the delay before the next try, or undefined when the budget is spent. */
  private recordFailure(entry: Entry, error: unknown): number | undefined {
    const now = Date.now();
    entry.lastError = error instanceof Error ? error.message : String(error);
    entry.restartTimes = entry.restartTimes.filter((t) => now - t < this.policy.windowMs);
    if (entry.restartTimes.length >= this.policy.maxRestarts)
      return this.giveUp(entry, error, 'past its restart budget');
    entry.restartTimes.push(now);
    entry.restarts++;
    const delay = exponentialDelay(entry.consecutive, this.policy.initialDelayMs, this.policy.maxDelayMs);
    entry.consecutive++;
    this.setState(entry, 'restarting');
    this.options.log.warn(
      { actor: entry.actor.name, err: error, delayMs: delay },
      'actor crashed; restarting',
    );
    return delay;
  }

  /**
   * A crashed actor is restarted together with everything that depends on it: its dependents
   * hold what it gave them (statements on its connection, its sockets), so they are stopped
   * first, in reverse start order, and started again after it, in start order. Only the crashed
   * actor's restart budget is charged. An actor that cannot be restarted (`restartable: false`,
   * e.g. the store whose connection every module holds) gives up at once.
   */
  private onCrash(name: string, error: unknown): void {
    const entry = this.entries.get(name);
    if (!entry || this.stopping) return;
    if (entry.state !== 'running' && entry.state !== 'starting') return; // already handling a crash
    const delay = entry.actor.restartable
      ? this.recordFailure(entry, error)
      : this.giveUp(entry, error, 'and cannot be restarted');
    const dependents = this.dependentsOf(name).filter((e) => e.state === 'running' || e.state === 'starting');
    void (async () => {
      for (const dependent of [...dependents].reverse()) {
        this.setState(dependent, 'restarting');
        await this.stopQuietly(dependent);
      }
      await this.stopQuietly(entry);
      if (delay === undefined || this.stopping) {
        for (const dependent of dependents) {
          this.setState(dependent, 'disabled');
          dependent.lastError = `dependency "${name}" is not running`;
        }
        return;
      }
      entry.timer = setTimeout(() => {
        entry.timer = undefined;
        void this.restartWithDependents(entry, dependents);
      }, delay);
    })();
  }

  private async restartWithDependents(entry: Entry, dependents: Entry[]): Promise<void> {
    try {
      await this.startWithRetries(entry);
    } catch (err) {
      // Only a required actor past its budget lands here; onGiveUp was already called.
      this.options.log.error({ actor: entry.actor.name, err }, 'restart abandoned');
      return;
    }
    if (entry.state !== 'running') return;
    for (const dependent of dependents) {
      if (this.stopping) return;
      await this.startWithRetries(dependent).catch((err: unknown) => {
        this.options.log.error({ actor: dependent.actor.name, err }, 'restart abandoned');
      });
    }
  }

  /** Everything that depends on `name`, directly or not, in start order. */
  private dependentsOf(name: string): Entry[] {
    const order = this.order.length ? this.order : this.startOrder();
    const affected = new Set([name]);
    const out: Entry[] = [];
    for (const candidate of order) {
      const e = this.entries.get(candidate)!;
      if (e.actor.dependsOn.some((d) => affected.has(d))) {
        affected.add(candidate);
        out.push(e);
      }
    }
    return out;
  }

  /** A required actor fails the hub (`onGiveUp`); an optional one is disabled and the hub runs on. */
  private giveUp(entry: Entry, error: unknown, why: string): undefined {
    entry.lastError = error instanceof Error ? error.message : String(error);
    const name = entry.actor.name;
    if (entry.actor.required) {
      this.setState(entry, 'failed');
      this.options.log.error({ actor: name, err: error }, `actor failed ${why}; giving up`);
      this.options.onGiveUp?.(name, error);
    } else {
      this.setState(entry, 'disabled');
      this.options.log.error({ actor: name, err: error }, `optional actor failed ${why}; disabled`);
    }
    return undefined;
  }

  private async stopQuietly(entry: Entry, deadlineMs = 5_000): Promise<void> {
    try {
      await withTimeout(entry.actor.stop(), deadlineMs, () => new StopDeadlineError());
    } catch (error) {
      if (error instanceof StopDeadlineError)
        this.options.log.warn(
          { actor: entry.actor.name, deadlineMs },
          'stop did not finish before its deadline',
        );
      else this.options.log.warn({ actor: entry.actor.name, err: error }, 'stop failed');
    } finally {
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
    if (entry.state === state) return;
    entry.state = state;
    this.options.onStateChange?.(entry.actor.name, state);
  }
}
