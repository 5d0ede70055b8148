/**
 * The signed-in user: a token from `POST /api/v1/auth/token`, kept in sessionStorage (this tab,
 * until it closes), with its refresh token. Shortly before the token expires the session trades
 * the refresh token at `POST /api/v1/auth/refresh` for a new pair (each refresh token works
 * once), and a call the hub answers 401 gets one refresh and one retry (api/client.ts), so a
 * user stays signed in while the tab is open. It ends on sign-out, when the refresh token is
 * refused (expired, or the user's tokens were revoked), or at the token's expiry without one;
 * those leave a message for the sign-in form.
 */
import { request, setTokenRefresher, setUnauthorizedHandler } from '../api/client.js';
import type { TokenResponse } from '../api/types.js';
import { t } from '../i18n/index.js';
import { tokenExpiry, tokenUsername } from '../lib/jwt.js';
import { ApiError } from '../lib/problem.js';
import { createStore } from '../lib/store.js';

export interface Session {
  token: string;
  username: string;
  expiresAt: number;
  /** Absent when the hub issues none (AUTH_REFRESH_TTL=0s). */
  refreshToken?: string;
}

export interface SessionState {
  session?: Session;
  /** Why the user was signed out (shown above the sign-in form). */
  notice?: string;
}

const KEY = 'meshhub.session';

interface TabStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** The tab's sessionStorage, when there is one (none in the tests, which run without the DOM library). */
function storage(): TabStorage | undefined {
  return (globalThis as { sessionStorage?: TabStorage }).sessionStorage;
}
export const expiredNotice = () => t('audit.session.expired');
export const revokedNotice = () => t('problem.signInAgain');
/** A failed refresh (the hub unreachable) is tried again this much later, until the token expires. */
const RETRY_REFRESH_MS = 15_000;

function restore(): Session | undefined {
  try {
    const raw = storage()?.getItem(KEY);
    if (!raw) return undefined;
    const saved = JSON.parse(raw) as Partial<Session>;
    if (
      typeof saved.token !== 'string' ||
      typeof saved.username !== 'string' ||
      typeof saved.expiresAt !== 'number' ||
      (saved.refreshToken !== undefined && typeof saved.refreshToken !== 'string')
    ) {
      return undefined;
    }
    return saved as Session;
  } catch {
    return undefined;
  }
}

export const sessionStore = createStore<SessionState>({});
let timer: ReturnType<typeof setTimeout> | undefined;
/** The refresh under way: concurrent 401s share it (a refresh token works once). */
let refreshing: Promise<string | undefined> | undefined;
/** This session's last replaced tokens: a call that still carried one is retried with the new one. */
const replaced: string[] = [];

/** When to refresh: a minute before expiry, or at four fifths of a shorter lifetime. */
function refreshAt(session: Session, now: number): number {
  return session.expiresAt - Math.min(60_000, Math.max(0, session.expiresAt - now) / 5);
}

function adopt(session: Session | undefined, notice?: string): void {
  clearTimeout(timer);
  try {
    if (session) storage()?.setItem(KEY, JSON.stringify(session));
    else storage()?.removeItem(KEY);
  } catch {
    // Private mode without storage: the session lives as long as the page.
  }
  sessionStore.set(session ? { session } : notice ? { notice } : {});
  if (session) schedule(session, session.refreshToken ? refreshAt(session, Date.now()) : session.expiresAt);
}

function schedule(session: Session, at: number): void {
  clearTimeout(timer);
  // setTimeout holds at most ~24.8 days; a longer wait is checked again then.
  timer = setTimeout(
    () => {
      if (sessionStore.get().session !== session) return;
      if (session.refreshToken) void refresh(session);
      else if (Date.now() >= session.expiresAt) adopt(undefined, expiredNotice());
      else adopt(session);
    },
    Math.min(Math.max(0, at - Date.now()), 2 ** 31 - 1),
  );
}

function sessionFrom(body: TokenResponse, fallbackName: string): Session {
  const token = body.access_token;
  return {
    token,
    username: tokenUsername(token) ?? fallbackName,
    expiresAt: tokenExpiry(token) ?? Date.now() + body.expires_in * 1000,
    ...(body.refresh_token ? { refreshToken: body.refresh_token } : {}),
  };
}

/** Trades the session's refresh token for a new pair; resolves with the new access token, or undefined. */
function refresh(session: Session): Promise<string | undefined> {
  refreshing ??= (async () => {
    try {
      const { body } = await request<TokenResponse>('/api/v1/auth/refresh', {
        method: 'POST',
        body: { refresh_token: session.refreshToken },
      });
      if (sessionStore.get().session !== session) return undefined;
      const next = sessionFrom(body, session.username);
      replaced.unshift(session.token);
      replaced.length = Math.min(replaced.length, 4);
      adopt(next);
      return next.token;
    } catch (error) {
      if (sessionStore.get().session !== session) return undefined;
      if (error instanceof ApiError && error.status !== 0 && error.status < 500 && error.status !== 429) {
        // Refused: used, expired or revoked. The user signs in again.
        adopt(undefined, Date.now() >= session.expiresAt ? expiredNotice() : revokedNotice());
      } else if (Date.now() >= session.expiresAt) {
        adopt(undefined, expiredNotice());
      } else {
        schedule(session, Date.now() + RETRY_REFRESH_MS);
      }
      return undefined;
    } finally {
      refreshing = undefined;
    }
  })();
  return refreshing;
}

export function initSession(): void {
  setUnauthorizedHandler((error: ApiError) => {
    if (!sessionStore.get().session) return;
    adopt(undefined, error.extras.reason === 'expired' ? expiredNotice() : revokedNotice());
  });
  setTokenRefresher(async (rejected) => {
    const session = sessionStore.get().session;
    if (!session) return undefined;
    // Another call already refreshed: use the new token. A token not of this session (an
    // identity provider's) is none of its business.
    if (session.token !== rejected) return replaced.includes(rejected) ? session.token : undefined;
    if (!session.refreshToken) return undefined;
    return refresh(session);
  });
  const saved = restore();
  if (saved && saved.expiresAt <= Date.now() && !saved.refreshToken) adopt(undefined, expiredNotice());
  else adopt(saved);
}

export async function signIn(username: string, password: string): Promise<void> {
  const { body } = await request<TokenResponse>('/api/v1/auth/token', {
    method: 'POST',
    body: { username, password },
  });
  adopt(sessionFrom(body, username.trim().toLowerCase()));
}

export function signOut(notice?: string): void {
  replaced.length = 0;
  adopt(undefined, notice);
}

export function currentToken(): string | undefined {
  return sessionStore.get().session?.token;
}
