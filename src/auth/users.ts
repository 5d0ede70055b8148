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
 */
import { randomInt } from 'node:crypto';
import type { Database, Statement } from '../store/database.js';
import { hashPassword, passwordProblem, verifyPassword } from './passwords.js';
import {
  MAX_REFRESH_TOKENS_PER_USER,
  newRefreshToken,
  REFRESH_TOKEN_PATTERN,
  type RefreshTokenStore,
  refreshTokenHash,
} from './refresh-tokens.js';

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

function checkRoles(roles: readonly string[]): string[] {
  const unique = [...new Set(roles)];
  const bad = unique.find((r) => !ROLE_PATTERN.test(r));
  if (bad !== undefined) throw new InvalidUserError('roles', `"${bad}" is not a valid role name`);
  return unique;
}

type UserRow = { username: string; roles: string; created_at: number; updated_at: number };
type LoginRow = { username: string; roles: string; token_version: number };

function parseRoles(json: string): string[] {
  try {
    const parsed: unknown = JSON.parse(json);
    return Array.isArray(parsed) ? parsed.filter((r): r is string => typeof r === 'string') : [];
  } catch {
    return [];
  }
}

function fromRow(row: UserRow): User {
  return {
    username: row.username,
    roles: parseRoles(row.roles),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

// Compared against for unknown users: random bytes in the format of DEFAULT_SCRYPT, so the
// unknown-user path costs exactly one scrypt like the known-user path.
const UNKNOWN_USER_HASH = 'scrypt$15$8$1$wmaetCr--UtZ-ujpCCMSGQ$JEYs-ufwUmmpWoDLFlqfPA6jOq9gkM8d-wCzuRcQoeQ';

export class UserRepository implements RefreshTokenStore {
  private readonly insert: Statement;
  private readonly byName: Statement<unknown[], UserRow & LoginRow & { password_hash: string }>;
  private readonly versionOf: Statement<unknown[], number>;
  private readonly all: Statement<unknown[], UserRow>;
  private readonly updatePassword: Statement;
  private readonly updateRoles: Statement;
  private readonly bumpVersion: Statement;
  private readonly deleteUser: Statement;
  private readonly insertRefresh: Statement;
  private readonly trimRefresh: Statement;
  private readonly expireRefresh: Statement;
  private readonly takeRefresh: Statement<
    unknown[],
    { username: string; token_version: number; expires_at: number }
  >;
  private readonly loginRow: Statement<unknown[], LoginRow>;
  private readonly dropRefresh: Statement;
  private readonly bump: (username: string, update: () => number) => boolean;
  private readonly redeem: (hash: string, now: number) => LoginUser | undefined;

  constructor(private readonly db: Database) {
    this.insert = db.prepare(
      'INSERT INTO users (username, password_hash, roles, created_at, updated_at, token_version) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.byName = db.prepare(
      'SELECT username, password_hash, roles, created_at, updated_at, token_version FROM users WHERE username = ?',
    ) as Statement<unknown[], UserRow & LoginRow & { password_hash: string }>;
    this.versionOf = db.prepare('SELECT token_version FROM users WHERE username = ?').pluck() as Statement<
      unknown[],
      number
    >;
    this.all = db.prepare(
      'SELECT username, roles, created_at, updated_at FROM users ORDER BY username LIMIT 10000',
    ) as Statement<unknown[], UserRow>;
    this.updatePassword = db.prepare('UPDATE users SET password_hash = ?, updated_at = ? WHERE username = ?');
    this.updateRoles = db.prepare('UPDATE users SET roles = ?, updated_at = ? WHERE username = ?');
    this.bumpVersion = db.prepare('UPDATE users SET token_version = token_version + 1 WHERE username = ?');
    this.deleteUser = db.prepare('DELETE FROM users WHERE username = ?');
    this.insertRefresh = db.prepare(
      'INSERT INTO refresh_tokens (token_hash, username, token_version, expires_at, created_at) VALUES (?, ?, ?, ?, ?)',
    );
    // Keeps a user's newest tokens only (by creation, ties by hash: deterministic).
    this.trimRefresh = db.prepare(
      `DELETE FROM refresh_tokens WHERE username = @username AND token_hash NOT IN (
         SELECT token_hash FROM refresh_tokens WHERE username = @username
         ORDER BY created_at DESC, token_hash DESC LIMIT ${MAX_REFRESH_TOKENS_PER_USER})`,
    );
    this.expireRefresh = db.prepare('DELETE FROM refresh_tokens WHERE expires_at <= ?');
    this.takeRefresh = db.prepare(
      'DELETE FROM refresh_tokens WHERE token_hash = ? RETURNING username, token_version, expires_at',
    ) as Statement<unknown[], { username: string; token_version: number; expires_at: number }>;
    this.loginRow = db.prepare(
      'SELECT username, roles, token_version FROM users WHERE username = ?',
    ) as Statement<unknown[], LoginRow>;
    this.dropRefresh = db.prepare('DELETE FROM refresh_tokens WHERE username = ?');
    // A change that ends the user's tokens: the change, the bump and the end of their refresh
    // tokens commit together.
    this.bump = db.transaction((username: string, update: () => number) => {
      if (update() !== 1) return false;
      this.bumpVersion.run(username);
      this.dropRefresh.run(username);
      return true;
    });
    this.redeem = db.transaction((hash: string, now: number) => {
      const taken = this.takeRefresh.get(hash);
      if (!taken || taken.expires_at <= now) return undefined;
      const row = this.loginRow.get(taken.username);
      if (!row || row.token_version !== taken.token_version) return undefined;
      return { username: row.username, roles: parseRoles(row.roles), tokenVersion: row.token_version };
    });
  }

  /** Creates a user; throws InvalidUserError (naming the field) or UserExistsError. */
  async add(input: { username: string; password: string; roles: readonly string[] }): Promise<User> {
    const username = normalizeUsername(input.username);
    const nameProblem = usernameProblem(username);
    if (nameProblem) throw new InvalidUserError('username', nameProblem);
    const roles = checkRoles(input.roles);
    const pwProblem = passwordProblem(input.password);
    if (pwProblem) throw new InvalidUserError('password', pwProblem);
    if (this.byName.get(username)) throw new UserExistsError(username);
    const hash = await hashPassword(input.password);
    const now = Date.now();
    try {
      this.insert.run(username, hash, JSON.stringify(roles), now, now, firstTokenVersion());
    } catch (error) {
      if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
        throw new UserExistsError(username);
      }
      throw error;
    }
    return { username, roles, createdAt: now, updatedAt: now };
  }

  get(username: string): User | undefined {
    const row = this.byName.get(normalizeUsername(username));
    return row ? fromRow(row) : undefined;
  }

  list(): User[] {
    return this.all.all().map(fromRow);
  }

  async setPassword(username: string, password: string): Promise<boolean> {
    const problem = passwordProblem(password);
    if (problem) throw new InvalidUserError('password', problem);
    const hash = await hashPassword(password);
    const name = normalizeUsername(username);
    return this.bump(name, () => this.updatePassword.run(hash, Date.now(), name).changes);
  }

  /** Replaces the user's roles (ending their tokens, which carry the old ones); false when there is no such user. */
  setRoles(username: string, roles: readonly string[]): boolean {
    const checked = checkRoles(roles);
    const name = normalizeUsername(username);
    return this.bump(name, () => this.updateRoles.run(JSON.stringify(checked), Date.now(), name).changes);
  }

  /** Removes the user; their tokens and refresh tokens end with them. */
  remove(username: string): boolean {
    const name = normalizeUsername(username);
    return this.db.transaction(() => {
      this.dropRefresh.run(name);
      return this.deleteUser.run(name).changes === 1;
    })();
  }

  /** Ends every token and refresh token issued to the user so far; false when there is no such user. */
  revokeTokens(username: string): boolean {
    const name = normalizeUsername(username);
    return this.bump(name, () => this.versionOf.all(name).length);
  }

  /**
   * The version the user's tokens must carry, or undefined when there is no such user: one
   * primary-key read, done for every local token the hub verifies (src/auth/hub-identity.ts).
   */
  tokenVersion(username: string): number | undefined {
    return this.versionOf.get(username);
  }

  createRefreshToken(user: LoginUser, expiresAt: number): string {
    const { token, hash } = newRefreshToken();
    const now = Date.now();
    this.db.transaction(() => {
      this.expireRefresh.run(now);
      this.insertRefresh.run(hash, user.username, user.tokenVersion, expiresAt, now);
      this.trimRefresh.run({ username: user.username });
    })();
    return token;
  }

  redeemRefreshToken(token: string, now: number): LoginUser | undefined {
    if (typeof token !== 'string' || !REFRESH_TOKEN_PATTERN.test(token)) return undefined;
    return this.redeem(refreshTokenHash(token), now);
  }

  /**
   * The user and roles when the password is right, else undefined. An unknown user costs the
   * same scrypt as a known one (against a throwaway hash), so timing does not reveal accounts.
   */
  async checkPassword(username: string, password: string): Promise<LoginUser | undefined> {
    if (typeof username !== 'string' || typeof password !== 'string') return undefined;
    const row = username.length <= 64 ? this.byName.get(normalizeUsername(username)) : undefined;
    const candidate = password.length <= 1024 ? password : '';
    if (!row) {
      await verifyPassword(candidate, UNKNOWN_USER_HASH);
      return undefined;
    }
    const ok = await verifyPassword(candidate, row.password_hash);
    if (!ok || candidate !== password) return undefined;
    return { username: row.username, roles: parseRoles(row.roles), tokenVersion: row.token_version };
  }
}
