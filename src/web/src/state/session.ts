/**
 * The signed-in user: a token from `POST /api/v1/auth/token`, kept in sessionStorage (this tab,
 * until it closes). It ends on sign-out, at the token's expiry, or when the hub refuses it;
 * the last two leave a message for the sign-in form.
 */
import { request, setUnauthorizedHandler } from '../api/client.js';
import type { TokenResponse } from '../api/types.js';
import { tokenExpiry, tokenUsername } from '../lib/jwt.js';
import type { ApiError } from '../lib/problem.js';
import { createStore } from '../lib/store.js';

export interface Session {
  token: string;
  username: string;
  expiresAt: number;
}

export interface SessionState {
  session?: Session;
  /** Why the user was signed out (shown above the sign-in form). */
  notice?: string;
}

const KEY = 'meshhub.session';
export const EXPIRED_NOTICE = 'Your session expired. Please sign in again.';

function restore(): Session | undefined {
  try {
    const raw = sessionStorage.getItem(KEY);
    if (!raw) return undefined;
    const saved = JSON.parse(raw) as Partial<Session>;
    if (
      typeof saved.token !== 'string' ||
      typeof saved.username !== 'string' ||
      typeof saved.expiresAt !== 'number'
    ) {
      return undefined;
    }
    return saved as Session;
  } catch {
    return undefined;
  }
}

export const sessionStore = createStore<SessionState>({});
let expiryTimer: ReturnType<typeof setTimeout> | undefined;

function adopt(session: Session | undefined, notice?: string): void {
  clearTimeout(expiryTimer);
  try {
    if (session) sessionStorage.setItem(KEY, JSON.stringify(session));
    else sessionStorage.removeItem(KEY);
  } catch {
    // Private mode without storage: the session lives as long as the page.
  }
  sessionStore.set(session ? { session } : notice ? { notice } : {});
  if (session) {
    const left = session.expiresAt - Date.now();
    // setTimeout holds at most ~24.8 days; a longer token is checked again then.
    expiryTimer = setTimeout(
      () => {
        if (Date.now() >= session.expiresAt) adopt(undefined, EXPIRED_NOTICE);
        else adopt(session);
      },
      Math.min(Math.max(0, left), 2 ** 31 - 1),
    );
  }
}

export function initSession(): void {
  setUnauthorizedHandler((error: ApiError) => {
    if (!sessionStore.get().session) return;
    adopt(
      undefined,
      error.extras.reason === 'expired'
        ? EXPIRED_NOTICE
        : 'Your sign-in is no longer valid. Please sign in again.',
    );
  });
  const saved = restore();
  if (saved && saved.expiresAt <= Date.now()) adopt(undefined, EXPIRED_NOTICE);
  else adopt(saved);
}

export async function signIn(username: string, password: string): Promise<void> {
  const { body } = await request<TokenResponse>('/api/v1/auth/token', {
    method: 'POST',
    body: { username, password },
  });
  const token = body.access_token;
  const expiresAt = tokenExpiry(token) ?? Date.now() + body.expires_in * 1000;
  adopt({ token, username: tokenUsername(token) ?? username.trim().toLowerCase(), expiresAt });
}

export function signOut(notice?: string): void {
  adopt(undefined, notice);
}

export function currentToken(): string | undefined {
  return sessionStore.get().session?.token;
}
