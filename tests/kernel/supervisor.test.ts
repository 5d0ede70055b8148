import { afterEach, describe, expect, it, vi } from 'vitest';
import { Actor } from '../../src/kernel/actor.js';
import { DependencyError, Supervisor } from '../../src/kernel/supervisor.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const fast = { initialDelayMs: 5, maxDelayMs: 40, maxRestarts: 3, windowMs: 10_000 };

class Probe extends Actor {
  starts = 0;
  stops = 0;
  failStarts = 0;
  stopDelayMs = 0;
  override readonly dependsOn: readonly string[];
  override readonly required: boolean;
  constructor(
    readonly name: string,
    private readonly journal: string[],
    opts: { dependsOn?: string[]; required?: boolean } = {},
  ) {
    super();
    this.dependsOn = opts.dependsOn ?? [];
    this.required = opts.required ?? true;
  }
  async start(): Promise<void> {
    this.starts++;
    this.journal.push(`start:${this.name}`);
    if (this.failStarts > 0) {
      this.failStarts--;
      throw new Error(`${this.name} cannot start`);
    }
  }
  async stop(): Promise<void> {
    this.stops++;
    this.journal.push(`stop:${this.name}`);
    if (this.stopDelayMs) await new Promise((r) => setTimeout(r, this.stopDelayMs));
  }
  fail(error: Error): void {
    this.crash(error);
  }
}

const waitFor = async (cond: () => boolean, ms = 2000) => {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
};

afterEach(() => {
  vi.useRealTimers();
});

describe('Supervisor', () => {
  it('starts in dependency order and stops in reverse order', async () => {
    const journal: string[] = [];
    const sup = new Supervisor({ log: silent, restart: fast });
    sup.add(new Probe('http', journal, { dependsOn: ['store', 'radio'] }));
    sup.add(new Probe('radio', journal, { dependsOn: ['store'] }));
    sup.add(new Probe('store', journal));
    await sup.startAll();
    expect(journal).toEqual(['start:store', 'start:radio', 'start:http']);
    journal.length = 0;
    await sup.stopAll();
    expect(journal).toEqual(['stop:http', 'stop:radio', 'stop:store']);
    expect(sup.status().every((s) => s.state === 'stopped')).toBe(true);
  });

  it('rejects unknown and cyclic dependencies', () => {
    const sup = new Supervisor({ log: silent });
    sup.add(new Probe('a', [], { dependsOn: ['b'] }));
    expect(() => sup.startOrder()).toThrow(DependencyError);
    sup.add(new Probe('b', [], { dependsOn: ['a'] }));
    expect(() => sup.startOrder()).toThrow(/cycle/);
  });

  it('restarts a crashed actor after its delay, doubles the delay for each failed try, counts restarts', async () => {
    vi.useFakeTimers();
    const journal: string[] = [];
    const sup = new Supervisor({ log: silent, restart: { ...fast, maxRestarts: 10 } });
    const radio = new Probe('radio', journal);
    sup.add(radio);
    await sup.startAll();
    radio.failStarts = 1;
    radio.fail(new Error('link lost'));
    await vi.advanceTimersByTimeAsync(fast.initialDelayMs - 1);
    expect(radio.starts).toBe(1);
    expect(sup.status()[0]!.state).toBe('restarting');
    await vi.advanceTimersByTimeAsync(1);
    expect(radio.starts).toBe(2); // the first try fails
    await vi.advanceTimersByTimeAsync(2 * fast.initialDelayMs - 1);
    expect(radio.starts).toBe(2);
    expect(sup.status()[0]!.state).toBe('restarting');
    await vi.advanceTimersByTimeAsync(1);
    expect(radio.starts).toBe(3);
    expect(sup.status()[0]).toMatchObject({ state: 'running', restarts: 2, lastError: 'radio cannot start' });
    expect(journal).toEqual(['start:radio', 'stop:radio', 'start:radio', 'stop:radio', 'start:radio']);
    await sup.stopAll();
  });

  it('gives up on a required actor past its restart budget and calls onGiveUp', async () => {
    const givenUp: string[] = [];
    const sup = new Supervisor({ log: silent, restart: fast, onGiveUp: (name) => givenUp.push(name) });
    const store = new Probe('store', []);
    sup.add(store);
    await sup.startAll();
    store.failStarts = 100; // every restart fails
    store.fail(new Error('disk gone'));
    await waitFor(() => givenUp.length === 1);
    expect(givenUp).toEqual(['store']);
    expect(sup.status()[0]!.state).toBe('failed');
    expect(store.starts).toBe(1 + fast.maxRestarts);
    await sup.stopAll();
  });

  it('disables an optional actor past its budget and keeps the others running', async () => {
    const givenUp: string[] = [];
    const sup = new Supervisor({ log: silent, restart: fast, onGiveUp: (name) => givenUp.push(name) });
    const core = new Probe('core', []);
    const plugin = new Probe('plugin:audit', [], { required: false });
    plugin.failStarts = 100;
    sup.add(core).add(plugin);
    await sup.startAll();
    const byName = Object.fromEntries(sup.status().map((s) => [s.name, s.state]));
    expect(byName).toEqual({ core: 'running', 'plugin:audit': 'disabled' });
    expect(givenUp).toEqual([]);
    await sup.stopAll();
  });

  it('a required actor that cannot start rejects startAll after its retries', async () => {
    const sup = new Supervisor({ log: silent, restart: fast });
    const store = new Probe('store', []);
    store.failStarts = 100;
    sup.add(store);
    await expect(sup.startAll()).rejects.toThrow('store cannot start');
    expect(store.starts).toBe(1 + fast.maxRestarts);
  });

  it('recovers when a start fails only a few times', async () => {
    const sup = new Supervisor({ log: silent, restart: fast });
    const radio = new Probe('radio', []);
    radio.failStarts = 2;
    sup.add(radio);
    await sup.startAll();
    expect(sup.status()[0]).toMatchObject({ state: 'running', restarts: 2 });
    await sup.stopAll();
  });

  it('bounds the whole shutdown by its deadline even when an actor hangs', async () => {
    vi.useFakeTimers();
    const journal: string[] = [];
    const sup = new Supervisor({ log: silent, stopDeadlineMs: 100 });
    const a = new Probe('a', journal);
    const b = new Probe('b', journal, { dependsOn: ['a'] });
    b.stopDelayMs = 10_000;
    sup.add(a).add(b);
    await sup.startAll();
    let stopped = false;
    void sup.stopAll().then(() => {
      stopped = true;
    });
    // b is stopped first and given the whole deadline; a only after it.
    await vi.advanceTimersByTimeAsync(99);
    expect(journal.slice(2)).toEqual(['stop:b']);
    expect(stopped).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(journal.slice(2)).toEqual(['stop:b', 'stop:a']);
    expect(stopped).toBe(true);
    expect(sup.status().map((s) => s.state)).toEqual(['stopped', 'stopped']);
  });

  it('does not restart actors while stopping', async () => {
    vi.useFakeTimers();
    const sup = new Supervisor({ log: silent, restart: fast });
    const radio = new Probe('radio', []);
    sup.add(radio);
    await sup.startAll();
    await sup.stopAll();
    radio.fail(new Error('late error'));
    // Past the longest restart delay: no restart was even scheduled.
    await vi.advanceTimersByTimeAsync(fast.maxDelayMs * 10);
    expect(vi.getTimerCount()).toBe(0);
    expect(radio.starts).toBe(1);
    expect(sup.status()[0]!.state).toBe('stopped');
  });

  it('a mailbox handler that throws crashes the actor and it is restarted', async () => {
    class Worker extends Actor {
      readonly name = 'worker';
      starts = 0;
      readonly inbox = this.createMailbox<string>('inbox', {
        capacity: 4,
        overflow: 'reject',
        handle: (m) => {
          if (m === 'poison') throw new Error('poisoned');
        },
      });
      async start() {
        this.starts++;
      }
      async stop() {}
    }
    const sup = new Supervisor({ log: silent, restart: fast });
    const worker = new Worker();
    sup.add(worker);
    await sup.startAll();
    worker.inbox.post('poison');
    await waitFor(() => worker.starts === 2);
    expect(sup.status()[0]).toMatchObject({ state: 'running', restarts: 1, lastError: 'poisoned' });
    expect(worker.mailboxStats()[0]).toMatchObject({ actor: 'worker', mailbox: 'inbox', capacity: 4 });
    await sup.stopAll();
  });
});
