import { expect } from 'vitest';

/**
 * What a token endpoint answers when it issues tokens (the hub's and the upstream's
 * /api/v1/auth/token, a refresh included): 200, not to be cached, a ten-minute bearer token and
 * a refresh token of 32 random bytes (base64url).
 */
export function expectTokensIssued(res: { status: number; headers: Headers; body: unknown }): void {
  expect(res.status).toBe(200);
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(res.body).toEqual({
    access_token: expect.any(String),
    token_type: 'Bearer',
    expires_in: 600,
    refresh_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
  });
}
