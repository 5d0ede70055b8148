/**
 * Calls to the audit plugin's API: the shared client (problem details → ApiError) with the audit
 * sign-in's bearer token, and the answers in plain words. The token goes in a header of its own
 * rather than through the client's `token`, so a refused audit token never signs the chat out:
 * it starts the audit sign-in again instead (and comes back to the same search).
 */
import { type ApiOptions, type ApiResponse, request } from '../api/client.js';
import { ApiError, plainWords } from '../lib/problem.js';
import { accessWords } from './access-words.js';
import { auditAuthStore, auditToken, expired, SignInRedirect } from './audit-session.js';

/** Without AUDIT_* credentials the hub collects nothing: the Sources page and an empty search say so. */
export const COLLECTION_NOT_CONFIGURED =
  'Collection is not configured: set AUDIT_TENANT_ID, AUDIT_CLIENT_ID and AUDIT_CLIENT_SECRET.';

export async function auditRequest<T>(path: string, options: ApiOptions = {}): Promise<ApiResponse<T>> {
  const token = auditToken();
  try {
    return await request<T>(path, {
      ...options,
      headers: { ...options.headers, ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });
  } catch (error) {
    if (error instanceof ApiError && error.status === 401 && token) {
      expired();
      throw new SignInRedirect('the token was refused');
    }
    throw error;
  }
}

export async function auditJson<T>(path: string, options: ApiOptions = {}): Promise<T> {
  return (await auditRequest<T>(path, options)).body;
}

/** An error from an audit call, in words a person can act on; undefined while a sign-in redirect runs. */
export function auditWords(error: unknown): string | undefined {
  if (error instanceof SignInRedirect) return undefined;
  if (!(error instanceof ApiError)) return plainWords(error);
  const { status } = error;
  if (status === 401) {
    return auditAuthStore.get().session
      ? 'Your sign-in is no longer valid. Please sign in again.'
      : 'Sign in to see the audit events.';
  }
  if (status === 403) return accessWords(error) ?? `Not allowed: ${error.detail}.`;
  if (status === 409) return `${capitalise(error.detail)}.`;
  if (status === 503) {
    if (/sign-in is not available|authentication settings/.test(error.detail))
      return 'Sign-in is switched on (AUTH_ENABLED) but not fully set up, so the audit data is locked. An administrator must complete the identity provider settings.';
    const wait = error.extras.retryAfterSeconds;
    return `${capitalise(error.detail)}.${wait !== undefined ? ` Try again in ${wait} s.` : ''}`;
  }
  if (status === 413) return `${capitalise(error.detail)}.`;
  if (status === 429) {
    // The hub's rate limiter names its tier; an export refused for running exports does not.
    const tier = error.extras.members?.tier;
    const what = typeof tier === 'string' ? TIER_WORDS[tier] : undefined;
    const wait = error.extras.retryAfterSeconds;
    return `${what ? `Too many ${what} from this computer for now` : capitalise(error.detail)}.${
      wait !== undefined ? ` Try again in ${waitWords(wait)}.` : ' Wait a moment and try again.'
    }`;
  }
  return plainWords(error);
}

/** The rate-limit tiers (plugins/audit/http/rate-limit.ts) in words. */
const TIER_WORDS: Record<string, string> = {
  fetch: 'fetch requests',
  ask: 'questions and explanations',
  write: 'changes',
  default: 'requests',
};

/** A Retry-After in words: "40 s", "3 min", "1 h 5 min". */
export function waitWords(seconds: number): string {
  if (seconds < 90) return `${Math.max(1, Math.round(seconds))} s`;
  const minutes = Math.ceil(seconds / 60);
  if (minutes < 90) return `${minutes} min`;
  const rest = minutes % 60;
  return `${Math.floor(minutes / 60)} h${rest ? ` ${rest} min` : ''}`;
}

const capitalise = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** The message for one field of a 400 (`errors[].field`), for showing next to that input. */
export function fieldError(error: unknown, ...fields: string[]): string | undefined {
  if (!(error instanceof ApiError)) return undefined;
  const hit = error.fieldErrors.find((e) => fields.some((f) => e.field === f || e.field.startsWith(`${f}.`)));
  return hit ? `${capitalise(hit.message)}.` : undefined;
}
