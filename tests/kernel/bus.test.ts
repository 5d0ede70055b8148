import { describe, expect, it, vi } from 'vitest';
import { AskTimeoutError, Bus, NoHandlerError } from '../../src/kernel/bus.js';

interface Events {
  ping: { n: number };
  other: string;
}
type Requests = {
  double: { request: number; response: number };
  slow: { request: undefined; response: string };
};

describe('Bus', () => {
  it('delivers typed events to every listener in registration order', () => {
    const bus = new Bus<Events, Requests>();
    const seen: string[] = [];
    bus.on('a', 'ping', (p) => seen.push(`a${p.n}`));
    bus.on('b', 'ping', (p) => seen.push(`b${p.n}`));
    bus.emit('ping', { n: 1 });
    expect(seen).toEqual(['a1', 'b1']);
  });

  it('reports a throwing listener with its owner and still runs the others', () => {
    const errors: Array<{ owner: string; event: string }> = [];
    const bus = new Bus<Events, Requests>((r) => errors.push({ owner: r.owner, event: r.event }));
    const after = vi.fn();
    bus.on('broken', 'ping', () => {
      throw new Error('boom');
    });
    bus.on('fine', 'ping', after);
    expect(() => bus.emit('ping', { n: 1 })).not.toThrow();
    expect(after).toHaveBeenCalledOnce();
    expect(errors).toEqual([{ owner: 'broken', event: 'ping' }]);
  });

  it('removeOwner drops all listeners and handlers of that owner only', async () => {
    const bus = new Bus<Events, Requests>();
    const kept = vi.fn();
    const dropped = vi.fn();
    bus.on('x', 'ping', dropped);
    bus.on('x', 'other', dropped);
    bus.on('y', 'ping', kept);
    bus.handle('x', 'double', (n) => n * 2);
    bus.removeOwner('x');
    bus.emit('ping', { n: 1 });
    bus.emit('other', 's');
    expect(dropped).not.toHaveBeenCalled();
    expect(kept).toHaveBeenCalledOnce();
    await expect(bus.ask('double', 2, { timeoutMs: 50 })).rejects.toBeInstanceOf(NoHandlerError);
  });

  it('the unsubscribe function removes one listener', () => {
    const bus = new Bus<Events, Requests>();
    const fn = vi.fn();
    const off = bus.on('a', 'ping', fn);
    off();
    bus.emit('ping', { n: 1 });
    expect(fn).not.toHaveBeenCalled();
    expect(bus.listenerCount('ping')).toBe(0);
  });

  it('a listener added during an emit does not receive that emit', () => {
    const bus = new Bus<Events, Requests>();
    const late = vi.fn();
    bus.on('a', 'ping', () => bus.on('b', 'ping', late));
    bus.emit('ping', { n: 1 });
    expect(late).not.toHaveBeenCalled();
    bus.emit('ping', { n: 2 });
    expect(late).toHaveBeenCalledWith({ n: 2 });
  });

  it('ask returns the handler answer, sync or async', async () => {
    const bus = new Bus<Events, Requests>();
    bus.handle('calc', 'double', async (n) => n * 2);
    await expect(bus.ask('double', 21, { timeoutMs: 100 })).resolves.toBe(42);
  });

  it('ask rejects with AskTimeoutError when no answer comes in time', async () => {
    const bus = new Bus<Events, Requests>();
    bus.handle('sleepy', 'slow', () => new Promise<string>(() => {}));
    const err = await bus.ask('slow', undefined, { timeoutMs: 20 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AskTimeoutError);
    expect((err as AskTimeoutError).timeoutMs).toBe(20);
  });

  it('ask carries a synchronous throw of the handler as a rejection', async () => {
    const bus = new Bus<Events, Requests>();
    bus.handle('bad', 'double', () => {
      throw new Error('nope');
    });
    await expect(bus.ask('double', 1, { timeoutMs: 100 })).rejects.toThrow('nope');
  });

  it('refuses a second handler for the same request', () => {
    const bus = new Bus<Events, Requests>();
    bus.handle('a', 'double', (n) => n);
    expect(() => bus.handle('b', 'double', (n) => n)).toThrow(/already handled by a/);
  });
});
