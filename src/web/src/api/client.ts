/**
 * Every call to the hub goes through here: JSON in and out, problem details turned into an
 * ApiError, no answer at all into an ApiError with status 0. A 401 on a signed-in call first
 * asks the session for a fresh token (its refresh token) and, given one, sends the call once
 * more with it; otherwise the 401 is reported to the session (which signs out with a message).
 */
import { ApiError, apiErrorFrom, retryAfterSeconds } from '../lib/problem.js';

export interface ApiOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  body?: unknown;
  /** Bearer token; a 401 then goes to `onUnauthorized`. */
  token?: string;
  signal?: AbortSignal;
  headers?: Record<string, string>;
}

export interface ApiResponse<T> {
  body: T;
  headers: Headers;
  status: number;
}

let onUnauthorized: (error: ApiError) => void = () => {};
let refreshToken: (rejected: string) => Promise<string | undefined> = async () => undefined;

/** The session registers how a rejected token is handled (sign out, back to sign-in). */
export function setUnauthorizedHandler(handler: (error: ApiError) => void): void {
  onUnauthorized = handler;
}

/** The session registers how a rejected token is replaced: a new one, or undefined when it cannot be. */
export function setTokenRefresher(refresher: (rejected: string) => Promise<string | undefined>): void {
  refreshToken = refresher;
}

export async function request<T>(path: string, options: ApiOptions = {}): Promise<ApiResponse<T>> {
  try {
    return await send<T>(path, options);
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 401 || !options.token) throw error;
    const fresh = await refreshToken(options.token).catch(() => undefined);
    if (!fresh) {
      onUnauthorized(error);
      throw error;
    }
    try {
      return await send<T>(path, { ...options, token: fresh });
    } catch (again) {
      if (again instanceof ApiError && again.status === 401) onUnauthorized(again);
      throw again;
    }
  }
}

async function send<T>(path: string, options: ApiOptions): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  // `cache` is spelled out in the type: the tests (tests/web) compile this file without the DOM library.
  const init: RequestInit & { cache?: 'no-store' } = {
    method: options.method ?? 'GET',
    headers,
    cache: 'no-store',
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  };
  let response: Response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    if (options.signal?.aborted) throw error;
    throw new ApiError(0, 'the hub cannot be reached');
  }
  const text = await response.text().catch(() => '');
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (!response.ok) {
    const error = apiErrorFrom(
      response.status,
      body,
      retryAfterSeconds(response.headers.get('retry-after'), Date.now()),
    );
    throw error;
  }
  return { body: body as T, headers: response.headers, status: response.status };
}

export async function getJson<T>(path: string, options: ApiOptions = {}): Promise<T> {
  return (await request<T>(path, options)).body;
}

export function isAbort(error: unknown): boolean {
  return error instanceof DOMException && error.name === 'AbortError';
}
