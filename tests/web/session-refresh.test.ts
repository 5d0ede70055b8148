/**
 * The web app stays signed in (issue 23, finding 14): its session trades the refresh token for a
 * new pair shortly before the access token expires, and a call answered 401 gets one refresh and
 * one retry; each refresh token is sent once, concurrent 401s share one refresh, and a refused
 * refresh signs out with a message. The hub is a fake `fetch`; the clock is vitest's.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { getJson } from '../../src/web/src/api/client.js';
import {
  currentToken,
  initSession,
  revokedNotice,
  sessionStore,
  signIn,
  signOut,
} from '../../src/web/src/state/session.js';

const LIFETIME_S = 900;

function jwt(n: number, expSeconds: number): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'EdDSA' })}.${part({ sub: 'alice', preferred_username: 'alice', exp: expSeconds, n })}.sig`;
}

/** A hub in a function: tokens, refresh tokens (each works once), and one protected route. */
function fakeHub() {
  let issued = 0;
  const liveRefresh = new Set<string>();
  let validToken = '';
  const refreshesSent: string[] = [];
  const problem = (status: number, detail: string) =>
    new Response(JSON.stringify({ status, detail }), {
      status,
      headers: { 'content-type': 'application/problem+json' },
    });
  const pair = () => {
    issued++;
    validToken = jwt(issued, Math.floor(Date.now() / 1000) + LIFETIME_S);
    const refresh = `refresh-${issued}`;
    liveRefresh.add(refresh);
    return Response.json({
      access_token: validToken,
      token_type: 'Bearer',
      expires_in: LIFETIME_S,
      refresh_token: refresh,
    });
  };
  const fetch = vi.fn(async (path: string, init: RequestInit = {}) => {
    const headers = (init.headers ?? {}) as Record<string, string>;
    if (path === '/api/v1/auth/token') return pair();
    if (path === '/api/v1/auth/refresh') {
      const { refresh_token } = JSON.parse(String(init.body)) as { refresh_token: string };
      refreshesSent.push(refresh_token);
      if (!liveRefresh.delete(refresh_token)) return problem(401, 'the refresh token is not valid');
      return pair();
    }
    if (path === '/api/v1/messages/conversations') {
      return headers.authorization === `Bearer ${validToken}`
        ? Response.json({ data: [] })
        : problem(401, 'the token has been revoked');
    }
    return problem(404, 'no such route');
  });
  return {
    fetch,
    refreshesSent,
    /** The hub forgets every token (the user's tokens were revoked, or the access token lapsed). */
    expireAccess: () => {
      validToken = 'none';
    },
    revokeAll: () => {
      validToken = 'none';
      liveRefresh.clear();
    },
  };
}

let hub: ReturnType<typeof fakeHub>;
beforeEach(() => {
  vi.useFakeTimers({ now: Date.UTC(2026, 10, 28, 10) });
  hub = fakeHub();
  vi.stubGlobal('fetch', hub.fetch);
  initSession();
});
afterEach(() => {
  signOut();
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

describe('the web session', () => {
  it('keeps the refresh token and, on a 401, refreshes once and retries the call with the new token', async () => {
    await signIn('alice', 'password');
    const first = currentToken()!;
    expect(sessionStore.get().session?.refreshToken).toBe('refresh-1');
    hub.expireAccess();
    const calls = Array.from({ length: 3 }, () =>
      getJson('/api/v1/messages/conversations', { token: first }),
    );
    expect(await Promise.all(calls)).toEqual([{ data: [] }, { data: [] }, { data: [] }]);
    // One refresh for the three 401s, with the refresh token of the sign-in; the new pair is kept.
    expect(hub.refreshesSent).toEqual(['refresh-1']);
    expect(currentToken()).not.toBe(first);
    expect(sessionStore.get().session?.refreshToken).toBe('refresh-2');
    // A call that still carried the old token is retried with the new one, no further refresh.
    expect(await getJson('/api/v1/messages/conversations', { token: first })).toEqual({ data: [] });
    expect(hub.refreshesSent).toEqual(['refresh-1']);
  });

  it('refreshes by itself before the token expires, so the user stays signed in', async () => {
    await signIn('alice', 'password');
    for (let i = 0; i < 3; i++) await vi.advanceTimersByTimeAsync(LIFETIME_S * 1000 - 30_000);
    expect(hub.refreshesSent).toEqual(['refresh-1', 'refresh-2', 'refresh-3']);
    expect(sessionStore.get().session?.refreshToken).toBe('refresh-4');
    expect(await getJson('/api/v1/messages/conversations', { token: currentToken()! })).toEqual({
      data: [],
    });
  });

  it('signs out with a message when the hub refuses the refresh token (the tokens were revoked)', async () => {
    await signIn('alice', 'password');
    const token = currentToken()!;
    hub.revokeAll();
    await expect(getJson('/api/v1/messages/conversations', { token })).rejects.toMatchObject({ status: 401 });
    expect(sessionStore.get()).toEqual({ notice: revokedNotice() });
    expect(hub.refreshesSent).toEqual(['refresh-1']);
  });

  it('leaves a call with another token (an identity provider’s) alone', async () => {
    await signIn('alice', 'password');
    await expect(
      getJson('/api/v1/messages/conversations', { token: 'someone-elses-token' }),
    ).rejects.toMatchObject({ status: 401 });
    expect(hub.refreshesSent).toEqual([]);
  });
});
