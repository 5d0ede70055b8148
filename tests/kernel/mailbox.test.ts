import { describe, expect, it } from 'vitest';
import { collectGarbage } from '../../hub/memory-trim.js';
import { Mailbox, type OverflowPolicy } from '../../src/kernel/mailbox.js';

/**
 * A mailbox whose handler records each message and then waits until `release()`: the first
 * message is taken at once and held, the rest queue up to `capacity`.
 */
function heldMailbox(capacity: number, overflow: OverflowPolicy) {
  const handled: number[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const box = new Mailbox<number>({
    capacity,
    overflow,
    handle: async (n) => {
      handled.push(n);
      await gate;
    },
    onError: () => {},
  });
  return { box, handled, release };
}

describe('Mailbox', () => {
  it('handles messages one at a time, in order, even when handlers are async', async () => {
    const log: string[] = [];
    let active = 0;
    let maxActive = 0;
    const box = new Mailbox<number>({
      capacity: 10,
      overflow: 'reject',
      handle: async (n) => {
        active++;
        maxActive = Math.max(maxActive, active);
        log.push(`start${n}`);
        await new Promise((r) => setTimeout(r, 2));
        log.push(`end${n}`);
        active--;
      },
      onError: () => {},
    });
    box.post(1);
    box.post(2);
    box.post(3);
    await box.idle();
    expect(maxActive).toBe(1);
    expect(log).toEqual(['start1', 'end1', 'start2', 'end2', 'start3', 'end3']);
  });

  it('reject policy refuses messages past capacity and counts them', async () => {
    const { box, handled, release } = heldMailbox(2, 'reject');
    expect(box.post(1)).toBe(true); // taken at once, being handled
    expect(box.post(2)).toBe(true);
    expect(box.post(3)).toBe(true);
    expect(box.post(4)).toBe(false);
    expect(box.depth).toBe(2);
    expect(box.rejected).toBe(1);
    release();
    await box.idle();
    expect(handled).toEqual([1, 2, 3]);
  });

  it('drop-oldest policy keeps the newest messages and counts the dropped', async () => {
    const { box, handled, release } = heldMailbox(3, 'drop-oldest');
    for (let i = 1; i <= 10; i++) expect(box.post(i)).toBe(true);
    expect(box.depth).toBe(3);
    expect(box.dropped).toBe(6);
    release();
    await box.idle();
    expect(handled).toEqual([1, 8, 9, 10]);
  });

  it('a failing handler is reported and the next message is still handled', async () => {
    const errors: unknown[] = [];
    const handled: number[] = [];
    const box = new Mailbox<number>({
      capacity: 5,
      overflow: 'reject',
      handle: (n) => {
        if (n === 2) throw new Error('bad 2');
        if (n === 3) return Promise.reject(new Error('bad 3'));
        handled.push(n);
      },
      onError: (e) => errors.push(e),
    });
    for (const n of [1, 2, 3, 4]) box.post(n);
    await box.idle();
    expect(handled).toEqual([1, 4]);
    expect(errors.map((e) => (e as Error).message)).toEqual(['bad 2', 'bad 3']);
  });

  it('a closed mailbox refuses new messages', () => {
    const box = new Mailbox<number>({
      capacity: 5,
      overflow: 'drop-oldest',
      handle: () => {},
      onError: () => {},
    });
    box.close();
    expect(box.post(1)).toBe(false);
  });

  it('keeps order across many messages (compaction)', async () => {
    const seen: number[] = [];
    const box = new Mailbox<number>({
      capacity: 10_000,
      overflow: 'reject',
      handle: (n) => void seen.push(n),
      onError: () => {},
    });
    for (let i = 0; i < 5000; i++) box.post(i);
    await box.idle();
    expect(seen.length).toBe(5000);
    expect(seen.every((n, i) => n === i)).toBe(true);
  });

  it('keeps no message alive once it is handled or dropped (a burst is garbage after it is stored)', async () => {
    // The ingest writer's mailbox held the last burst's readings (30 MB after a year of history)
    // until another burst reused the array: handled slots were only dropped in chunks of 1,024.
    const handledRefs: WeakRef<{ n: number }>[] = [];
    const droppedRefs: WeakRef<{ n: number }>[] = [];
    let gate!: () => void;
    const held = new Promise<void>((r) => {
      gate = r;
    });
    const box = new Mailbox<{ n: number; payload: number[] }>({
      capacity: 100,
      overflow: 'drop-oldest',
      handle: async (m) => {
        if (m.n === 0) await held;
      },
      onError: () => {},
    });
    // Each message is made in a function, so nothing in this test's scope holds the last one.
    const make = (n: number) => {
      const message = { n, payload: new Array(100).fill(n) };
      // 0 is taken at once and held; 1..199 are dropped while it is held; 200..299 are handled.
      (n >= 1 && n < 200 ? droppedRefs : handledRefs).push(new WeakRef(message));
      return message;
    };
    for (let n = 0; n < 300; n++) box.post(make(n));
    expect(box.dropped).toBe(199);
    gate();
    await box.idle();
    await new Promise((r) => setTimeout(r, 0));
    expect(collectGarbage()).toBe(true);
    expect(handledRefs.map((r) => r.deref()?.n).filter((n) => n !== undefined)).toEqual([]);
    expect(droppedRefs.map((r) => r.deref()?.n).filter((n) => n !== undefined)).toEqual([]);
  });
});
