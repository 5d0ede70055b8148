/**
 * Supervision by dependency: an actor that restarts takes everything that depends on it down
 * first and up again after it, in order; an actor that cannot be restarted gives up at once.
 */
import { describe, expect, it } from 'vitest';
import { Actor } from '../../src/kernel/actor.js';
import { Supervisor } from '../../src/kernel/supervisor.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

class Probe extends Actor {
  override readonly dependsOn: readonly string[];
  override readonly restartable: boolean;
  constructor(
    readonly name: string,
    private readonly journal: Journal,
    opts: { dependsOn?: string[]; restartable?: boolean } = {},
  ) {
    super();
    this.dependsOn = opts.dependsOn ?? [];
    this.restartable = opts.restartable ?? true;
  }
  async start(): Promise<void> {
    this.journal.push(`start:${this.name}`);
  }
  async stop(): Promise<void> {
    this.journal.push(`stop:${this.name}`);
  }
  fail(): void {
    this.crash(new Error(`${this.name} broke`));
  }
}

/** A journal of starts, stops and supervisor states (`state:name=running`), awaitable per entry. */
class Journal extends Array<string> {
  private waiters: Array<{ entry: string; resolve: () => void }> = [];
  override push(...entries: string[]): number {
    const n = super.push(...entries);
    for (const w of this.waiters.filter((w) => this.includes(w.entry))) w.resolve();
    return n;
  }
  until(entry: string): Promise<void> {
    if (this.includes(entry)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ entry, resolve }));
  }
}

describe('Supervisor restarts by dependency', () => {
  it('stops the dependents of a crashed actor, restarts it, then starts them again in order', async () => {
    const journal = new Journal();
    const states = new Journal();
    const sup = new Supervisor({
      log: silent,
      restart: { initialDelayMs: 1 },
      onStateChange: (name, state) => states.push(`${name}=${state}`),
    });
    const store = new Probe('store', journal);
    const writer = new Probe('writer', journal, { dependsOn: ['store'] });
    const broker = new Probe('broker', journal, { dependsOn: ['writer'] });
    const http = new Probe('http', journal, { dependsOn: ['store'] });
    sup.add(store).add(writer).add(broker).add(http);
    await sup.startAll();
    journal.length = 0;

    states.length = 0;
    writer.fail();
    await states.until('broker=running');
    expect([...journal]).toEqual(['stop:broker', 'stop:writer', 'start:writer', 'start:broker']);
    // Only the crashed actor is charged a restart; the one that does not depend on it never stopped.
    const status = Object.fromEntries(sup.status().map((s) => [s.name, s]));
    expect(status.writer!.restarts).toBe(1);
    expect(status.broker!.restarts).toBe(0);
    expect(status.broker!.state).toBe('running');
    expect(status.http!.state).toBe('running');
    await sup.stopAll();
  });

  it('gives up at once on an actor that cannot be restarted, and disables what depends on it', async () => {
    const journal = new Journal();
    const gaveUp: string[] = [];
    const states = new Journal();
    const sup = new Supervisor({
      log: silent,
      restart: { initialDelayMs: 1 },
      onGiveUp: (name) => gaveUp.push(name),
      onStateChange: (name, state) => states.push(`${name}=${state}`),
    });
    const store = new Probe('store', journal, { restartable: false });
    const writer = new Probe('writer', journal, { dependsOn: ['store'] });
    sup.add(store).add(writer);
    await sup.startAll();
    journal.length = 0;

    store.fail();
    await states.until('writer=disabled');
    expect([...journal]).toEqual(['stop:writer', 'stop:store']);
    expect(gaveUp).toEqual(['store']);
    const status = Object.fromEntries(sup.status().map((s) => [s.name, s.state]));
    expect(status).toEqual({ store: 'failed', writer: 'disabled' });
    expect(journal).not.toContain('start:store');
  });
});
