import { randomUUID } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';

declare module 'hono' {
  /** Set by `requestId()` on every request of the hub's app, before any route runs. */
  interface ContextVariableMap {
    requestId: string;
  }
}

// A client-sent id is echoed only when it is short and printable: it ends up in logs.
const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Carries `x-request-id` (spec: the correlation id): taken from the request when sane, else generated; echoed in the response. */
export function requestId(options: { header?: string } = {}): MiddlewareHandler {
  const header = options.header ?? 'x-request-id';
  return async function requestIdMiddleware(c, next) {
    const incoming = c.req.header(header);
    const id = incoming && SAFE_ID.test(incoming) ? incoming : randomUUID();
    c.set('requestId', id);
    c.header(header, id);
    await next();
    // Error responses are built fresh by onError; make sure they carry the id too.
    if (!c.res.headers.has(header)) c.res.headers.set(header, id);
  };
}
