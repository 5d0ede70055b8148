/**
 * Every call to the hub goes through here: JSON in and out, problem details turned into an
 * ApiError, no answer at all into an ApiError with status 0, and a 401 on a signed-in call
 * reported to the session (which signs out with a message).
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

/** The session registers how a rejected token is handled (sign out, back to sign-in). */
export function setUnauthorizedHandler(handler: (error: ApiError) => void): void {
  onUnauthorized = handler;
}

export async function request<T>(path: string, options: ApiOptions = {}): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(path, {
      method: options.method ?? 'GET',
      headers,
      cache: 'no-store',
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
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
    if (response.status === 401 && options.token) onUnauthorized(error);
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
