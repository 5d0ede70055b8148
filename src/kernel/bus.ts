/**
 * The typed bus: the only contract between actors.
 *
 * - `emit`/`on` carry events declared once in an event map (the hub's is `HubEvents`).
 * - `handle`/`ask` carry requests declared in a request map, answered by exactly one owner,
 *   with a timeout on every ask.
 *
 * - Retained events (named when the bus is made) keep their last value: `last(name)` reads it,
 *   and `on(…, { replay: true })` hands it to a late listener at once. State such as the radio
 *   link status has one owner that emits it; everyone else reads it from here, never from the
 *   owner's object.
 *
 * Every listener is registered under an owner name; `removeOwner` drops all of them, so an
 * actor that stops (or a plugin that is disabled) leaves nothing behind. A throwing listener
 * is reported with its owner's name and never prevents the other listeners from running.
 */
import { withTimeout } from './timing.js';

export type EventMap = object;
export type RequestMap = object;

type Req<T> = T extends { request: infer Q } ? Q : never;
type Res<T> = T extends { response: infer A } ? A : never;

export type Listener<T> = (payload: T) => void;

export class AskTimeoutError extends Error {
  override readonly name = 'AskTimeoutError';
  constructor(
    readonly request: string,
    readonly timeoutMs: number,
  ) {
    super(`no answer to "${request}" within ${timeoutMs} ms`);
  }
}

export class NoHandlerError extends Error {
  override readonly name = 'NoHandlerError';
  constructor(readonly request: string) {
    super(`nobody handles "${request}"`);
  }
}

export interface ListenerErrorReport {
  owner: string;
  event: string;
  error: unknown;
}

interface Registration {
  owner: string;
  fn: Listener<never>;
}

interface RequestHandler {
  owner: string;
  fn: (request: never) => unknown;
}

export interface BusOptions<E> {
  onListenerError?: (report: ListenerErrorReport) => void;
  /** Events whose last value is kept for `last()` and `on(…, { replay: true })`. */
  retained?: ReadonlyArray<keyof E>;
}

export class Bus<E extends EventMap, R extends RequestMap = Record<never, never>> {
  private readonly listeners = new Map<keyof E, Registration[]>();
  private readonly handlers = new Map<keyof R, RequestHandler>();
  private readonly retainedValues = new Map<keyof E, unknown>();
  private readonly retainedNames: ReadonlySet<keyof E>;
  private readonly onListenerError: (report: ListenerErrorReport) => void;

  constructor(options: BusOptions<E> | ((report: ListenerErrorReport) => void) = {}) {
    const o = typeof options === 'function' ? { onListenerError: options } : options;
    this.onListenerError = o.onListenerError ?? (() => {});
    this.retainedNames = new Set(o.retained ?? []);
  }

  on<K extends keyof E>(
    owner: string,
    event: K,
    fn: Listener<E[K]>,
    options?: { replay?: boolean },
  ): () => void {
    const registration: Registration = { owner, fn: fn as Listener<never> };
    const list = this.listeners.get(event);
    // Copy-on-write: a listener added or removed during an emit does not disturb that emit.
    this.listeners.set(event, list ? [...list, registration] : [registration]);
    if (options?.replay && this.retainedValues.has(event)) {
      this.call(registration, event, this.retainedValues.get(event) as E[K]);
    }
    return () => {
      const current = this.listeners.get(event);
      if (!current) return;
      const next = current.filter((r) => r !== registration);
      if (next.length) this.listeners.set(event, next);
      else this.listeners.delete(event);
    };
  }

  emit<K extends keyof E>(event: K, payload: E[K]): void {
    if (this.retainedNames.has(event)) this.retainedValues.set(event, payload);
    const list = this.listeners.get(event);
    if (!list) return;
    for (const registration of list) this.call(registration, event, payload);
  }

  /** For tests of the bus itself: how many listeners an event has. */
  listenerCount<K extends keyof E>(event: K): number {
    return this.listeners.get(event)?.length ?? 0;
  }

  /** The last value of a retained event, or undefined before its first emit. */
  last<K extends keyof E>(event: K): E[K] | undefined {
    if (!this.retainedNames.has(event)) throw new Error(`"${String(event)}" is not a retained event`);
    return this.retainedValues.get(event) as E[K] | undefined;
  }

  private call<K extends keyof E>({ owner, fn }: Registration, event: K, payload: E[K]): void {
    try {
      (fn as Listener<E[K]>)(payload);
    } catch (error) {
      this.onListenerError({ owner, event: String(event), error });
    }
  }

  /** Answers `ask(name, …)`. One handler per request name; a second registration is a bug. */
  handle<K extends keyof R>(
    owner: string,
    name: K,
    fn: (request: Req<R[K]>) => Res<R[K]> | Promise<Res<R[K]>>,
  ): () => void {
    const existing = this.handlers.get(name);
    if (existing) {
      throw new Error(`"${String(name)}" is already handled by ${existing.owner}`);
    }
    const handler: RequestHandler = { owner, fn: fn as (request: never) => unknown };
    this.handlers.set(name, handler);
    return () => {
      if (this.handlers.get(name) === handler) this.handlers.delete(name);
    };
  }

  hasHandler<K extends keyof R>(name: K): boolean {
    return this.handlers.has(name);
  }

  async ask<K extends keyof R>(
    name: K,
    request: Req<R[K]>,
    options: { timeoutMs: number },
  ): Promise<Res<R[K]>> {
    const handler = this.handlers.get(name);
    if (!handler) throw new NoHandlerError(String(name));
    // Promise.resolve().then: a handler that throws synchronously rejects the ask, not the caller's stack.
    const answer = Promise.resolve().then(() => (handler.fn as (r: Req<R[K]>) => Res<R[K]>)(request));
    return withTimeout(
      answer,
      options.timeoutMs,
      () => new AskTimeoutError(String(name), options.timeoutMs),
      {
        unref: true,
      },
    );
  }

  /** Removes every listener and request handler registered under `owner`. */
  removeOwner(owner: string): void {
    for (const [event, list] of this.listeners) {
      const next = list.filter((r) => r.owner !== owner);
      if (next.length) this.listeners.set(event, next);
      else this.listeners.delete(event);
    }
    for (const [name, handler] of this.handlers) {
      if (handler.owner === owner) this.handlers.delete(name);
    }
  }
}
