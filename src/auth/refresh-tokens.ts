/**
 * Refresh tokens (README "Logins and tokens"): 32 random bytes, base64url, opaque to the client.
 * Stores keep only their SHA-256 (a stolen database does not hand out sessions), use each one
 * once (the refresh endpoint hands out the next), and accept one only while its user's token
 * version is still the one it was issued at. A user keeps at most MAX_REFRESH_TOKENS_PER_USER;
 * a new one beyond that ends the oldest.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { LoginUser } from './user-service.js';

export const REFRESH_TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
export const MAX_REFRESH_TOKENS_PER_USER = 20;

export function newRefreshToken(): { token: string; hash: string } {
  const token = randomBytes(32).toString('base64url');
  return { token, hash: refreshTokenHash(token) };
}

export function refreshTokenHash(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

/** Where refresh tokens are kept: a `UserService` (user-service.ts), over SQLite or PostgreSQL. */
export interface RefreshTokenStore {
  /** Stores a new refresh token of `user` (at its token version) and returns it. */
  createRefreshToken(user: LoginUser, expiresAt: number): Promise<string> | string;
  /**
   * Takes `token` out of the store and returns its user, with the roles they have now, when it
   * was unexpired and the user's token version is unchanged; else undefined.
   */
  redeemRefreshToken(token: string, now: number): Promise<LoginUser | undefined> | LoginUser | undefined;
}
