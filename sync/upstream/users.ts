/**
 * The upstream's local accounts (table `users`, db/schema.ts): internet subscribers and admins.
 * The rules are the hub's (src/auth/users.ts): lower-case usernames of `a-z 0-9 . _ -`, role
 * names checked, scrypt hashes (src/auth/passwords.ts), and `checkPassword` costs one scrypt
 * whether or not the user exists, so timing does not tell which usernames exist.
 *
 * Disabling a user also tells every site, in the same transaction: a `user` command
 * (`{ principal, display_name, disabled: true }`) is queued for each registered site that is
 * not revoked, and the site revokes that subscriber's `upstream:<principal>` subscriptions.
 *
 * Tokens are revocable as on a hub (README "Logins and tokens"): each user has a token version,
 * carried in their tokens and refresh tokens; a password or role change, disabling and
 * `revokeTokens` bump it. The upstream's verifier reads it from PostgreSQL for every local token
 * (`tokenVersion`, a primary-key read; no cache, so a revocation holds at once in every process).
 * A disabled user gets no token, and the tokens they had are refused.
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { hashPassword, passwordProblem, verifyPassword } from '../../src/auth/passwords.js';
import {
  MAX_REFRESH_TOKENS_PER_USER,
  newRefreshToken,
  REFRESH_TOKEN_PATTERN,
  type RefreshTokenStore,
  refreshTokenHash,
} from '../../src/auth/refresh-tokens.js';
import {
  firstTokenVersion,
  InvalidUserError,
  type LoginUser,
  normalizeUsername,
  ROLE_PATTERN,
  UserExistsError,
  usernameProblem,
} from '../../src/auth/users.js';
import { type CommandBody, userCommandBody } from '../protocol.js';
import { withTransaction } from './db/pool.js';
import { enqueueCommand } from './downlink-queue.js';

export { InvalidUserError, UserExistsError };

export interface UpstreamUser {
  username: string;
  roles: string[];
  disabled: boolean;
  /** ms since the epoch. */
  createdAt: number;
  updatedAt: number;
}

function checkRoles(roles: readonly string[]): string[] {
  const unique = [...new Set(roles.map((r) => r.trim()).filter(Boolean))];
  const bad = unique.find((r) => !ROLE_PATTERN.test(r));
  if (bad !== undefined) throw new InvalidUserError('roles', `"${bad}" is not a valid role name`);
  return unique;
}

type UserRow = {
  username: string;
  roles: string[];
  disabled: boolean;
  created_at: string | number;
  updated_at: string | number;
};

function fromRow(row: UserRow): UpstreamUser {
  return {
    username: row.username,
    roles: row.roles,
    disabled: row.disabled,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

const COLUMNS = 'username, roles, disabled, created_at, updated_at';
const MAX_LISTED_USERS = 10_000;

export class UpstreamUsers implements RefreshTokenStore {
  /** A hash of random bytes, compared against for unknown users (made on first need). */
  private unknownUserHash: Promise<string> | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly now: () => number = Date.now,
  ) {}

  /** Creates a user; throws InvalidUserError (naming the field) or UserExistsError. */
  async add(input: { username: string; password: string; roles: readonly string[] }): Promise<UpstreamUser> {
    const username = normalizeUsername(input.username);
    const nameProblem = usernameProblem(username);
    if (nameProblem) throw new InvalidUserError('username', nameProblem);
    const roles = checkRoles(input.roles);
    const pwProblem = passwordProblem(input.password);
    if (pwProblem) throw new InvalidUserError('password', pwProblem);
    const hash = await hashPassword(input.password);
    const now = this.now();
    const result = await this.pool.query<UserRow>(
      `INSERT INTO users (username, password_hash, roles, disabled, created_at, updated_at, token_version)
       VALUES ($1, $2, $3, false, $4, $4, $5)
       ON CONFLICT (username) DO NOTHING
       RETURNING ${COLUMNS}`,
      [username, hash, roles, now, firstTokenVersion()],
    );
    const row = result.rows[0];
    if (!row) throw new UserExistsError(username);
    return fromRow(row);
  }

  async get(username: string): Promise<UpstreamUser | undefined> {
    const result = await this.pool.query<UserRow>(`SELECT ${COLUMNS} FROM users WHERE username = $1`, [
      normalizeUsername(username),
    ]);
    const row = result.rows[0];
    return row ? fromRow(row) : undefined;
  }

  async list(): Promise<UpstreamUser[]> {
    const result = await this.pool.query<UserRow>(
      `SELECT ${COLUMNS} FROM users ORDER BY username LIMIT ${MAX_LISTED_USERS}`,
    );
    return result.rows.map(fromRow);
  }

  /** Changes the password, ending the user's tokens; false when there is no such user. */
  async setPassword(username: string, password: string): Promise<boolean> {
    const problem = passwordProblem(password);
    if (problem) throw new InvalidUserError('password', problem);
    const hash = await hashPassword(password);
    const name = normalizeUsername(username);
    const result = await this.pool.query(
      'UPDATE users SET password_hash = $1, updated_at = $2, token_version = token_version + 1 WHERE username = $3',
      [hash, this.now(), name],
    );
    return this.revoked(name, result.rowCount);
  }

  /** Replaces the user's roles, ending their tokens (they carry the old ones); false when there is no such user. */
  async setRoles(username: string, roles: readonly string[]): Promise<boolean> {
    const checked = checkRoles(roles);
    const name = normalizeUsername(username);
    const result = await this.pool.query(
      'UPDATE users SET roles = $1, updated_at = $2, token_version = token_version + 1 WHERE username = $3',
      [checked, this.now(), name],
    );
    return this.revoked(name, result.rowCount);
  }

  /** Ends every token and refresh token of the user; false when there is no such user. */
  async revokeTokens(username: string): Promise<boolean> {
    const name = normalizeUsername(username);
    const result = await this.pool.query(
      'UPDATE users SET token_version = token_version + 1 WHERE username = $1',
      [name],
    );
    return this.revoked(name, result.rowCount);
  }

  /**
   * The version the user's tokens must carry; undefined when there is no such user or it is
   * disabled. Read for every local token the upstream verifies.
   */
  async tokenVersion(username: string): Promise<number | undefined> {
    const result = await this.pool.query<{ token_version: number }>(
      'SELECT token_version FROM users WHERE username = $1 AND NOT disabled',
      [username],
    );
    return result.rows[0]?.token_version;
  }

  async createRefreshToken(user: LoginUser, expiresAt: number): Promise<string> {
    const { token, hash } = newRefreshToken();
    const now = this.now();
    await withTransaction(this.pool, async (client) => {
      await client.query('DELETE FROM refresh_tokens WHERE expires_at <= $1', [now]);
      await client.query(
        `INSERT INTO refresh_tokens (token_hash, username, token_version, expires_at, created_at)
         VALUES ($1, $2, $3, $4, $5)`,
        [hash, user.username, user.tokenVersion, expiresAt, now],
      );
      await client.query(
        `DELETE FROM refresh_tokens WHERE username = $1 AND token_hash NOT IN (
           SELECT token_hash FROM refresh_tokens WHERE username = $1
           ORDER BY created_at DESC, token_hash DESC LIMIT ${MAX_REFRESH_TOKENS_PER_USER})`,
        [user.username],
      );
    });
    return token;
  }

  async redeemRefreshToken(token: string, now: number): Promise<LoginUser | undefined> {
    if (typeof token !== 'string' || !REFRESH_TOKEN_PATTERN.test(token)) return undefined;
    // The DELETE makes it single use: of two concurrent redeems, one gets the row.
    const taken = await this.pool.query<{ username: string; token_version: number; expires_at: number }>(
      'DELETE FROM refresh_tokens WHERE token_hash = $1 RETURNING username, token_version, expires_at',
      [refreshTokenHash(token)],
    );
    const row = taken.rows[0];
    if (!row || Number(row.expires_at) <= now) return undefined;
    const user = await this.pool.query<{ username: string; roles: string[]; token_version: number }>(
      'SELECT username, roles, token_version FROM users WHERE username = $1 AND NOT disabled',
      [row.username],
    );
    const found = user.rows[0];
    if (!found || found.token_version !== row.token_version) return undefined;
    return { username: found.username, roles: found.roles, tokenVersion: found.token_version };
  }

  /** After a token version bump: the user's refresh tokens are void, so they go. */
  private async revoked(username: string, rowCount: number | null): Promise<boolean> {
    if (rowCount !== 1) return false;
    await this.pool.query('DELETE FROM refresh_tokens WHERE username = $1', [username]);
    return true;
  }

  /**
   * Disables the user and, in the same transaction, queues a `user` command for every site that
   * is not revoked. Returns the number of sites told, or undefined when there is no such user.
   * Disabling a disabled user tells the sites again (harmless: revoking twice changes nothing).
   */
  async disable(username: string): Promise<number | undefined> {
    const name = normalizeUsername(username);
    return withTransaction(this.pool, async (client) => {
      const updated = await client.query(
        'UPDATE users SET disabled = true, updated_at = $1, token_version = token_version + 1 WHERE username = $2',
        [this.now(), name],
      );
      if (updated.rowCount !== 1) return undefined;
      await client.query('DELETE FROM refresh_tokens WHERE username = $1', [name]);
      const body: CommandBody<'user'> = userCommandBody.parse({
        principal: name,
        display_name: name,
        disabled: true,
      });
      const sites = await client.query<{ site_id: string }>(
        'SELECT site_id FROM sites WHERE revoked_at IS NULL ORDER BY site_id',
      );
      for (const { site_id } of sites.rows) await enqueueCommand(client, site_id, 'user', body);
      return sites.rows.length;
    });
  }

  /**
   * Lets a disabled user log in again. The sites are not told: subscriptions they revoked stay
   * revoked until granted again.
   */
  async enable(username: string): Promise<boolean> {
    const result = await this.pool.query(
      'UPDATE users SET disabled = false, updated_at = $1 WHERE username = $2',
      [this.now(), normalizeUsername(username)],
    );
    return result.rowCount === 1;
  }

  /**
   * The user and roles when the password is right and the user is not disabled, else
   * undefined. An unknown user costs the same scrypt as a known one.
   */
  async checkPassword(username: string, password: string): Promise<LoginUser | undefined> {
    if (typeof username !== 'string' || typeof password !== 'string') return undefined;
    const candidate = password.length <= 1024 ? password : '';
    const row =
      username.length <= 64
        ? (
            await this.pool.query<{
              username: string;
              password_hash: string;
              roles: string[];
              disabled: boolean;
              token_version: number;
            }>(
              'SELECT username, password_hash, roles, disabled, token_version FROM users WHERE username = $1',
              [normalizeUsername(username)],
            )
          ).rows[0]
        : undefined;
    if (!row) {
      this.unknownUserHash ??= hashPassword(randomBytes(24).toString('base64url'));
      await verifyPassword(candidate, await this.unknownUserHash);
      return undefined;
    }
    const ok = await verifyPassword(candidate, row.password_hash);
    if (!ok || candidate !== password || row.disabled) return undefined;
    return { username: row.username, roles: row.roles, tokenVersion: row.token_version };
  }
}
