/**
 * Where a `UserService` (user-service.ts) keeps its users and refresh tokens: the one interface
 * both applications implement, the hub over SQLite (sqlite-storage.ts) and the upstream over
 * PostgreSQL (sync/upstream/auth/pg-storage.ts).
 */
import type { LoginUser, User } from './user-service.js';

/** What a sign-in checks of a stored user. */
export interface StoredLogin extends LoginUser {
  passwordHash: string;
  /** A disabled user (the upstream's) gets no token. */
  disabled: boolean;
}

/** A new user as stored: the name normalized, the password hashed, the first token version. */
export interface NewUserRow {
  username: string;
  passwordHash: string;
  roles: string[];
  tokenVersion: number;
  at: number;
}

/** A change that ends the user's tokens: a new password hash or new roles, at `at`. */
export interface UserChange {
  passwordHash?: string;
  roles?: string[];
  at: number;
}

/** A refresh token's hash as stored, and how many of the user's newest tokens stay. */
export interface NewRefreshToken {
  hash: string;
  username: string;
  tokenVersion: number;
  expiresAt: number;
  at: number;
  keep: number;
}

/**
 * Where a `UserService` keeps its users and their refresh tokens. Names come normalized; each
 * call that writes is one atomic step of the store (a transaction where it writes twice).
 */
export interface UserStorage<U extends User = User> {
  get(username: string): Promise<U | undefined>;
  /** The first `limit` users by name. */
  list(limit: number): Promise<U[]>;
  login(username: string): Promise<StoredLogin | undefined>;
  /** Stores a new user; undefined when the name is taken. */
  insert(user: NewUserRow): Promise<U | undefined>;
  /**
   * Applies the change (a new password hash or roles, with `updated_at`; none: only the bump),
   * bumps the user's token version and forgets their refresh tokens, together; false when there
   * is no such user.
   */
  endTokens(username: string, change?: UserChange): Promise<boolean>;
  /** The version the user's tokens must carry; undefined: no such user, or a disabled one. */
  tokenVersion(username: string): Promise<number | undefined>;
  /**
   * Stores a refresh token's hash, forgetting expired ones (`expires_at <= at`) and all but the
   * user's `keep` newest (by creation, ties by hash).
   */
  addRefreshToken(token: NewRefreshToken): Promise<void>;
  /**
   * Takes the token out (single use: of two concurrent takes, one gets it) with its user as they
   * are now (undefined: gone or disabled); undefined for an unknown token.
   */
  takeRefreshToken(
    hash: string,
  ): Promise<{ tokenVersion: number; expiresAt: number; user: LoginUser | undefined } | undefined>;
}
