/**
 * One HTTP client for both Microsoft APIs: bearer token, timeouts, and the retry policy.
 *
 * Transient failures back off with jitter and are retried up to `maxRetries` times within a
 * fetch run: 429 with `Retry-After` (honoured), 429 without it, 500/502/503/504, the Management
 * API's `403 {"error":{"code":"AF429"}}` throttling, network errors and timeouts. A 401 fetches
 * a fresh token once. Anything still failing ends the run with an UpstreamError; the source
 * keeps its watermark and the next run resumes — no fetch stops for good on a transient error.
 *
 * Only URLs of the configured origin are ever requested: `@odata.nextLink`, `NextPageUri` and
 * content URIs come from the upstream, and the bearer token must never follow them elsewhere.
 */

import { equalJitter, exponentialDelay } from '../../../src/kernel/backoff.js';
import { pause } from '../../../src/kernel/timing.js';
import type { TokenSource } from './token-provider.js';

export type UpstreamFailureKind =
  | 'throttled'
  | 'unavailable'
  | 'network'
  | 'auth'
  | 'forbidden'
  | 'not_found'
  | 'bad_request'
  | 'malformed_response'
  | 'foreign_link'
  | 'private_address'
  | 'aborted';

export class UpstreamError extends Error {
  override readonly name = 'UpstreamError';
  constructor(
    readonly kind: UpstreamFailureKind,
    message: string,
    readonly extras: { status?: number; code?: string; retryAfterMs?: number } = {},
  ) {
    super(message);
  }

  /** Worth trying again later (the next run): everything but a refused request. */
  get transient(): boolean {
    return this.kind === 'throttled' || this.kind === 'unavailable' || this.kind === 'network';
  }
}

export interface RetryPolicy {
  maxRetries: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** A longer `Retry-After` ends the run instead of holding it; the next run resumes. */
  maxRetryAfterMs: number;
  requestTimeoutMs: number;
}

export interface UpstreamHooks {
  /** Each throttled or unavailable answer (counted in source health and metrics). */
  onRetry?: (info: { kind: UpstreamFailureKind; status?: number; waitMs: number }) => void;
}

/** `Retry-After`: delay-seconds or an HTTP-date (RFC 9110 10.2.3); undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (/^\d{1,9}$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  if (!Number.isFinite(at) || !/[a-z]/i.test(v)) return undefined;
  return Math.max(0, at - now);
}

/** `base` + `path`, keeping a path prefix the base URL may have (a proxy, a fake under a prefix). */
export function apiUrl(base: URL, path: string, query: Record<string, string> = {}): URL {
  const url = new URL(base.origin);
  url.pathname = base.pathname.replace(/\/+$/, '') + path;
  // Spaces as %20 and `$filter` unescaped, as in Microsoft's own examples (URLSearchParams would write `+`).
  const search = Object.entries(query)
    .map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
    .join('&');
  if (search) url.search = `?${search}`;
  return url;
}

const MAX_BODY_BYTES = 64 * 1024 * 1024;

/** Reads `error.code` / `error.message` of a Microsoft error body, if it is one. */
function errorOf(text: string): { code?: string; message?: string } {
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } | string };
    if (body && typeof body.error === 'object' && body.error) {
      return {
        ...(typeof body.error.code === 'string' ? { code: body.error.code } : {}),
        ...(typeof body.error.message === 'string' ? { message: body.error.message.slice(0, 200) } : {}),
      };
    }
  } catch {
    // Not JSON: the status alone tells.
  }
  return {};
}

export interface UpstreamResponse {
  body: unknown;
  headers: Headers;
}

export class UpstreamClient {
  constructor(
    private readonly origin: URL,
    private readonly tokens: TokenSource,
    private readonly policy: RetryPolicy,
    private readonly hooks: UpstreamHooks = {},
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  /** The same client (and token cache) reporting its retries to `hooks`. */
  withHooks(hooks: UpstreamHooks): UpstreamClient {
    return new UpstreamClient(this.origin, this.tokens, this.policy, hooks, this.fetchImpl);
  }

  get(url: URL, signal?: AbortSignal): Promise<UpstreamResponse> {
    return this.request('GET', url, signal);
  }

  post(url: URL, signal?: AbortSignal, body?: unknown): Promise<UpstreamResponse> {
    return this.request('POST', url, signal, body);
  }

  /** A JSON PATCH (Graph subscription renewal). */
  patch(url: URL, body: unknown, signal?: AbortSignal): Promise<UpstreamResponse> {
    return this.request('PATCH', url, signal, body);
  }

  /** A link handed over by the upstream, accepted only when it leads back to the same origin. */
  follow(link: unknown): URL {
    let url: URL;
    try {
      url = new URL(String(link));
    } catch {
      throw new UpstreamError('malformed_response', 'the upstream returned an unreadable link');
    }
    if (url.origin !== this.origin.origin) {
      throw new UpstreamError('foreign_link', `the upstream pointed at another host (${url.host})`);
    }
    return url;
  }

  private async request(
    method: 'GET' | 'POST' | 'PATCH',
    url: URL,
    signal?: AbortSignal,
    body?: unknown,
  ): Promise<UpstreamResponse> {
    if (url.origin !== this.origin.origin) {
      throw new UpstreamError('foreign_link', `refusing to send a token to ${url.host}`);
    }
    let refreshedToken = false;
    for (let attempt = 0; ; attempt++) {
      let failure: UpstreamError;
      try {
        return await this.once(method, url, signal, body);
      } catch (error) {
        if (!(error instanceof UpstreamError)) throw error;
        failure = error;
      }
      if (failure.kind === 'auth' && failure.extras.status === 401 && !refreshedToken) {
        refreshedToken = true;
        this.tokens.invalidate();
        attempt--;
        continue;
      }
      if (!failure.transient || attempt >= this.policy.maxRetries) throw failure;
      const retryAfter = failure.extras.retryAfterMs;
      if (retryAfter !== undefined && retryAfter > this.policy.maxRetryAfterMs) throw failure;
      const jitter = equalJitter(
        exponentialDelay(attempt, this.policy.backoffBaseMs, this.policy.backoffMaxMs),
      );
      const waitMs =
        retryAfter !== undefined
          ? retryAfter + Math.round(Math.random() * Math.min(1000, retryAfter * 0.1))
          : jitter;
      this.hooks.onRetry?.({
        kind: failure.kind,
        ...(failure.extras.status ? { status: failure.extras.status } : {}),
        waitMs,
      });
      await pause(waitMs, signal);
      if (signal?.aborted) throw new UpstreamError('aborted', 'stopped');
    }
  }

  private async once(
    method: string,
    url: URL,
    signal?: AbortSignal,
    body?: unknown,
  ): Promise<UpstreamResponse> {
    const token = await this.tokens.get(signal);
    const timeout = AbortSignal.timeout(this.policy.requestTimeoutMs);
    let res: Response;
    try {
      res = await this.fetchImpl(url, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/json',
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (error) {
      if (signal?.aborted) throw new UpstreamError('aborted', 'stopped');
      // The address guard's refusal (microsoft/address-guard.ts) says why itself.
      if (error instanceof UpstreamError) throw error;
      throw new UpstreamError(
        'network',
        `no answer from ${url.host}${timeout.aborted ? ' (timed out)' : ''}`,
      );
    }
    let text: string;
    try {
      const length = Number(res.headers.get('content-length') ?? 0);
      if (length > MAX_BODY_BYTES) throw new Error('too large');
      text = await res.text();
      if (text.length > MAX_BODY_BYTES) throw new Error('too large');
    } catch {
      if (signal?.aborted) throw new UpstreamError('aborted', 'stopped');
      throw new UpstreamError('network', `the answer from ${url.host} broke off or was too large`);
    }
    const status = res.status;
    if (status >= 200 && status < 300) {
      if (!text.trim()) return { body: undefined, headers: res.headers };
      try {
        return { body: JSON.parse(text), headers: res.headers };
      } catch {
        throw new UpstreamError(
          'malformed_response',
          `${url.pathname} answered ${status} with a body that is not JSON`,
          {
            status,
          },
        );
      }
    }
    const { code, message } = errorOf(text);
    const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'));
    const extras = {
      status,
      ...(code ? { code } : {}),
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    };
    const what = `${method} ${url.pathname} answered ${status}${code ? ` ${code}` : ''}${message ? `: ${message}` : ''}`;
    // The Management API throttles with 403 and code AF429 rather than 429.
    if (status === 429 || (status === 403 && code === 'AF429'))
      throw new UpstreamError('throttled', what, extras);
    if (status >= 500) throw new UpstreamError('unavailable', what, extras);
    if (status === 401) throw new UpstreamError('auth', what, extras);
    if (status === 403) throw new UpstreamError('forbidden', what, extras);
    if (status === 404) throw new UpstreamError('not_found', what, extras);
    throw new UpstreamError('bad_request', what, extras);
  }
}
