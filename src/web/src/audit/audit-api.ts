/**
 * Calls to the audit plugin's API: the shared client (problem details → ApiError) with the audit
 * sign-in's bearer token, and the answers in plain words. The token goes in a header of its own
 * rather than through the client's `token`, so a refused audit token never signs the chat out:
 * it starts the audit sign-in again instead (and comes back to the same search).
 */
import { type ApiOptions, type ApiResponse, request } from '../api/client.js';
import { type MessageKey, t } from '../i18n/index.js';
import { ApiError, plainWords } from '../lib/problem.js';
import { accessWords } from './access-words.js';
import { auditAuthStore, auditToken, expired, SignInRedirect } from './audit-session.js';

/** Without AUDIT_* credentials the hub collects nothing: the Sources page and an empty search say so. */
/** The console's words when the hub collects no audit events (AUDIT_* unset). */
export const collectionNotConfigured = () => t('audit.api.notConfigured');

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
    return auditAuthStore.get().session ? t('problem.signInAgain') : t('audit.api.signIn');
  }
  if (status === 403) return accessWords(error) ?? t('problem.notAllowed', { detail: error.detail });
  if (status === 409) return `${capitalise(error.detail)}.`;
  if (status === 503) {
    if (/sign-in is not available|authentication settings/.test(error.detail))
      return t('audit.api.authIncomplete');
    const wait = error.extras.retryAfterSeconds;
    return `${capitalise(error.detail)}.${wait !== undefined ? ` ${t('audit.api.tryAgainIn', { wait: `${wait} s` })}` : ''}`;
  }
  if (status === 413) return `${capitalise(error.detail)}.`;
  if (status === 429) {
    // The hub's rate limiter names its tier; an export refused for running exports does not.
    const tier = error.extras.members?.tier;
    const what = typeof tier === 'string' ? TIER_WORDS[tier] : undefined;
    const wait = error.extras.retryAfterSeconds;
    return `${what ? t(what) : capitalise(error.detail)}. ${
      wait !== undefined ? t('audit.api.tryAgainIn', { wait: waitWords(wait) }) : t('audit.api.waitAMoment')
    }`;
  }
  return plainWords(error);
}

/** The rate-limit tiers (plugins/audit/http/rate-limit.ts) in words. */
const TIER_WORDS: Record<string, MessageKey> = {
  fetch: 'audit.api.tooManyFetch',
  ask: 'audit.api.tooManyAsk',
  write: 'audit.api.tooManyWrite',
  default: 'audit.api.tooMany',
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
