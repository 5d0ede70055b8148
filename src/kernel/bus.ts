/**
 * The typed bus: the only contract between actors.
 *
 * - `emit`/`on` carry events declared once in an event map (the hub's is `HubEvents`).
 * - `handle`/`ask` carry requests declared in a request map, answered by exactly one owner,
 *   with a timeout on every ask.
 *
 * Every listener is registered under an owner name; `removeOwner` drops all of them, so an
 * actor that stops (or a plugin that is disabled) leaves nothing behind. A throwing listener
 * is reported with its owner's name and never prevents the other listeners from running.
 */

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

export class Bus<E extends EventMap, R extends RequestMap = Record<never, never>> {
  private readonly listeners = new Map<keyof E, Registration[]>();
  private readonly handlers = new Map<keyof R, RequestHandler>();

  constructor(private readonly onListenerError: (report: ListenerErrorReport) => void = () => {}) {}

  on<K extends keyof E>(owner: string, event: K, fn: Listener<E[K]>): () => void {
    const registration: Registration = { owner, fn: fn as Listener<never> };
    const list = this.listeners.get(event);
    // Copy-on-write: a listener added or removed during an emit does not disturb that emit.
    this.listeners.set(event, list ? [...list, registration] : [registration]);
    return () => {
      const current = this.listeners.get(event);
      if (!current) return;
      const next = current.filter((r) => r !== registration);
      if (next.length) this.listeners.set(event, next);
      else this.listeners.delete(event);
    };
  }

  emit<K extends keyof E>(event: K, payload: E[K]): void {
    const list = this.listeners.get(event);
    if (!list) return;
    for (const { owner, fn } of list) {
      try {
        (fn as Listener<E[K]>)(payload);
      } catch (error) {
        this.onListenerError({ owner, event: String(event), error });
      }
    }
  }

  listenerCount<K extends keyof E>(event: K): number {
    return this.listeners.get(event)?.length ?? 0;
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
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new AskTimeoutError(String(name), options.timeoutMs)),
        options.timeoutMs,
      );
      timer.unref?.();
    });
    try {
      // Promise.resolve().then: a handler that throws synchronously rejects the ask, not the caller's stack.
      const answer = Promise.resolve().then(() => (handler.fn as (r: Req<R[K]>) => Res<R[K]>)(request));
      return await Promise.race([answer, timeout]);
    } finally {
      clearTimeout(timer);
    }
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
