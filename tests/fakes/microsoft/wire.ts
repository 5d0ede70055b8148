/**
 * The wire shapes the Microsoft fake answers with: JSON bodies, and the injected faults —
 * 429 with or without Retry-After, 503, the Management API's 403 AF429, and a 200 whose body is
 * not JSON (a proxy's error page).
 */
import type { ServerResponse } from 'node:http';

export type Fault =
  | { status: 429; retryAfter?: string }
  | { status: 503 }
  | { af429: true }
  | { garbage: true }
  | { status: number; body?: unknown };

/** Answers with `fault` if there is one; returns whether it did. */
export function applyFault(fault: Fault | undefined, res: ServerResponse, api: string): boolean {
  if (!fault) return false;
  if ('garbage' in fault) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('<html><body>Service Unavailable</body></html>');
  } else if ('af429' in fault) {
    send(res, 403, {
      error: {
        code: 'AF429',
        message: 'Too many requests. Method=GetBlob, PublisherId=00000000-0000-0000-0000-000000000000',
      },
    });
  } else if (fault.status === 429) {
    const headers: Record<string, string> = {};
    if ('retryAfter' in fault && fault.retryAfter !== undefined) headers['retry-after'] = fault.retryAfter;
    send(
      res,
      429,
      { error: { code: 'TooManyRequests', message: `${api} is throttling this client` } },
      headers,
    );
  } else if (fault.status === 503) {
    send(res, 503, { error: { code: 'ServiceUnavailable', message: 'Service unavailable' } });
  } else {
    send(res, fault.status, 'body' in fault ? fault.body : { error: { code: 'Fault', message: 'injected' } });
  }
  return true;
}

export function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify(body));
}
