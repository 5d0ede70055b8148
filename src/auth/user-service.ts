/**
 * Local accounts (subscribers, admins, and free-form roles such as `device`, `integration`,
 * `ingest` for machine users of MQTT and the ingest API). Shared by the messaging API, the MQTT
 * broker and the audit plugin: keep this API stable.
 *
 * Usernames are lower-case (`Alice` logs in as `alice`), 1–32 of `a-z 0-9 . _ -`, so they fit an
 * `@name` prefix in a radio text and an MQTT topic segment. `checkPassword` takes the same time
 * for an unknown user as for a wrong password, so it does not tell which usernames exist.
 *
 * Each user has a token version, carried in every token the hub issues for them: a password or
 * role change, removal and `revokeTokens` bump it, which ends their tokens and refresh tokens
 * (README "Logins and tokens"). A new user starts at a random version, so a token of a removed
 * user of the same name does not come back to life.
 *
 * One service, two stores (docs/architecture.md "The two applications"): `UserService` holds
 * these rules over a `UserStorage` (user-storage.ts), which the hub implements over its SQLite
 * file (sqlite-storage.ts, `HubUserService` below) and the upstream over PostgreSQL
 * (sync/upstream/auth/pg-storage.ts).
 */
import { randomInt } from 'node:crypto';
import type { Database } from '../store/database.js';
import { hashPassword, passwordProblem, verifyPassword } from './passwords.js';
import {
  MAX_REFRESH_TOKENS_PER_USER,
  newRefreshToken,
  REFRESH_TOKEN_PATTERN,
  type RefreshTokenStore,
  refreshTokenHash,
} from './refresh-tokens.js';
import { SqliteUserStorage } from './sqlite-storage.js';
import type { UserStorage } from './user-storage.js';

export const USERNAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,31}$/;
export const ROLE_PATTERN = /^[a-z][a-z0-9_-]{0,31}$/;
export const SUBSCRIBER_ROLE = 'subscriber';
export const ADMIN_ROLE = 'admin';

export interface User {
  username: string;
  roles: string[];
  /** Milliseconds since the epoch. */
  createdAt: number;
  updatedAt: number;
}

export interface AuthenticatedUser {
  username: string;
  roles: string[];
}

/** A user who just proved who they are, with the token version their tokens must carry. */
export interface LoginUser extends AuthenticatedUser {
  tokenVersion: number;
}

/** The first token version of a new user: random, so it never repeats a removed namesake's. */
export function firstTokenVersion(): number {
  return randomInt(1, 2 ** 30);
}

/** A username, role or password that cannot be stored; `field` names which. */
export class InvalidUserError extends Error {
  override readonly name = 'InvalidUserError';
  constructor(
    readonly field: 'username' | 'roles' | 'password',
    message: string,
  ) {
    super(`${field} ${message}`);
  }
}

export class UserExistsError extends Error {
  override readonly name = 'UserExistsError';
  constructor(readonly username: string) {
    super(`user "${username}" already exists`);
  }
}

export function normalizeUsername(username: string): string {
  return username.trim().toLowerCase();
}

export function usernameProblem(username: string): string | undefined {
  return USERNAME_PATTERN.test(username)
    ? undefined
    : "must be 1–32 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit";
}

export function checkRoles(roles: readonly string[]): string[] {
  const unique = [...new Set(roles)];
  const bad = unique.find((r) => !ROLE_PATTERN.test(r));
  if (bad !== undefined) throw new InvalidUserError('roles', `"${bad}" is not a valid role name`);
  return unique;
}

const MAX_LISTED_USERS = 10_000;

// Compared against for unknown users: random bytes in the format of DEFAULT_SCRYPT, so the
// unknown-user path costs exactly one scrypt like the known-user path.
const UNKNOWN_USER_HASH = 'scrypt$15$8$1$wmaetCr--UtZ-ujpCCMSGQ$JEYs-ufwUmmpWoDLFlqfPA6jOq9gkM8d-wCzuRcQoeQ';

/** The rules of local accounts (the file's comment), over a hub's or the upstream's store. */
export class UserService<U extends User = User> implements RefreshTokenStore {
  constructor(
    protected readonly storage: UserStorage<U>,
    protected readonly now: () => number = Date.now,
  ) {}

  /** Creates a user; throws InvalidUserError (naming the field) or UserExistsError. */
  async add(input: { username: string; password: string; roles: readonly string[] }): Promise<U> {
    const username = normalizeUsername(input.username);
    const nameProblem = usernameProblem(username);
    if (nameProblem) throw new InvalidUserError('username', nameProblem);
    const roles = checkRoles(input.roles);
    const pwProblem = passwordProblem(input.password);
    if (pwProblem) throw new InvalidUserError('password', pwProblem);
    // Before the scrypt: a taken name costs no hash.
    if (await this.storage.get(username)) throw new UserExistsError(username);
    const passwordHash = await hashPassword(input.password);
    const user = await this.storage.insert({
      username,
      passwordHash,
      roles,
      tokenVersion: firstTokenVersion(),
      at: this.now(),
    });
    if (!user) throw new UserExistsError(username);
    return user;
  }

  get(username: string): Promise<U | undefined> {
    return this.storage.get(normalizeUsername(username));
  }

  list(): Promise<U[]> {
    return this.storage.list(MAX_LISTED_USERS);
  }

  /** Changes the password, ending the user's tokens; false when there is no such user. */
  async setPassword(username: string, password: string): Promise<boolean> {
    const problem = passwordProblem(password);
    if (problem) throw new InvalidUserError('password', problem);
    const passwordHash = await hashPassword(password);
    return this.storage.endTokens(normalizeUsername(username), { passwordHash, at: this.now() });
  }

  /** Replaces the user's roles (ending their tokens, which carry the old ones); false when there is no such user. */
  async setRoles(username: string, roles: readonly string[]): Promise<boolean> {
    const checked = checkRoles(roles);
    return this.storage.endTokens(normalizeUsername(username), { roles: checked, at: this.now() });
  }

  /** Ends every token and refresh token issued to the user so far; false when there is no such user. */
  revokeTokens(username: string): Promise<boolean> {
    return this.storage.endTokens(normalizeUsername(username));
  }

  /**
   * The version the user's tokens must carry, or undefined when there is no such user (or it is
   * disabled): one primary-key read, done for every local token verified
   * (src/auth/hub-identity.ts).
   */
  tokenVersion(username: string): Promise<number | undefined> {
    return this.storage.tokenVersion(username);
  }

  async createRefreshToken(user: LoginUser, expiresAt: number): Promise<string> {
    const { token, hash } = newRefreshToken();
    await this.storage.addRefreshToken({
      hash,
      username: user.username,
      tokenVersion: user.tokenVersion,
      expiresAt,
      at: this.now(),
      keep: MAX_REFRESH_TOKENS_PER_USER,
    });
    return token;
  }

  async redeemRefreshToken(token: string, now: number): Promise<LoginUser | undefined> {
    if (typeof token !== 'string' || !REFRESH_TOKEN_PATTERN.test(token)) return undefined;
    const taken = await this.storage.takeRefreshToken(refreshTokenHash(token));
    if (!taken || taken.expiresAt <= now) return undefined;
    const { user } = taken;
    if (!user || user.tokenVersion !== taken.tokenVersion) return undefined;
    return user;
  }

  /**
   * The user and roles when the password is right (and the user is not disabled), else
   * undefined. An unknown user costs the same scrypt as a known one (against a throwaway hash),
   * so timing does not reveal accounts.
   */
  async checkPassword(username: string, password: string): Promise<LoginUser | undefined> {
    if (typeof username !== 'string' || typeof password !== 'string') return undefined;
    const row = username.length <= 64 ? await this.storage.login(normalizeUsername(username)) : undefined;
    const candidate = password.length <= 1024 ? password : '';
    if (!row) {
      await verifyPassword(candidate, UNKNOWN_USER_HASH);
      return undefined;
    }
    const ok = await verifyPassword(candidate, row.passwordHash);
    if (!ok || candidate !== password || row.disabled) return undefined;
    return { username: row.username, roles: row.roles, tokenVersion: row.tokenVersion };
  }
}

/** The hub's users, in its SQLite file (sqlite-storage.ts). */
export class HubUserService extends UserService<User> {
  private readonly sqlite: SqliteUserStorage;

  constructor(db: Database) {
    const storage = new SqliteUserStorage(db);
    super(storage);
    this.sqlite = storage;
  }

  /** Removes the user; their tokens and refresh tokens end with them. */
  async remove(username: string): Promise<boolean> {
    return this.sqlite.remove(normalizeUsername(username));
  }
}
