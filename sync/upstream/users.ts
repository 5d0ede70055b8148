/**
 * The upstream's local accounts (table `users`, db/schema.ts): internet subscribers and admins.
 * The rules are the hub's (src/auth/users.ts): lower-case usernames of `a-z 0-9 . _ -`, role
 * names checked, scrypt hashes (src/auth/passwords.ts), and `checkPassword` costs one scrypt
 * whether or not the user exists, so timing does not tell which usernames exist.
 *
 * Disabling a user also tells every site, in the same transaction: a `user` command
 * (`{ principal, display_name, disabled: true }`) is queued for each registered site that is
 * not revoked, and the site revokes that subscriber's `upstream:<principal>` subscriptions.
 * A disabled user cannot get a token; tokens already issued stay valid until they expire.
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { hashPassword, passwordProblem, verifyPassword } from '../../src/auth/passwords.js';
import {
  type AuthenticatedUser,
  InvalidUserError,
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

export class UpstreamUsers {
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
      `INSERT INTO users (username, password_hash, roles, disabled, created_at, updated_at)
       VALUES ($1, $2, $3, false, $4, $4)
       ON CONFLICT (username) DO NOTHING
       RETURNING ${COLUMNS}`,
      [username, hash, roles, now],
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

  /** False when there is no such user. */
  async setPassword(username: string, password: string): Promise<boolean> {
    const problem = passwordProblem(password);
    if (problem) throw new InvalidUserError('password', problem);
    const hash = await hashPassword(password);
    const result = await this.pool.query(
      'UPDATE users SET password_hash = $1, updated_at = $2 WHERE username = $3',
      [hash, this.now(), normalizeUsername(username)],
    );
    return result.rowCount === 1;
  }

  /** Replaces the user's roles; false when there is no such user. */
  async setRoles(username: string, roles: readonly string[]): Promise<boolean> {
    const checked = checkRoles(roles);
    const result = await this.pool.query('UPDATE users SET roles = $1, updated_at = $2 WHERE username = $3', [
      checked,
      this.now(),
      normalizeUsername(username),
    ]);
    return result.rowCount === 1;
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
        'UPDATE users SET disabled = true, updated_at = $1 WHERE username = $2',
        [this.now(), name],
      );
      if (updated.rowCount !== 1) return undefined;
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
  async checkPassword(username: string, password: string): Promise<AuthenticatedUser | undefined> {
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
            }>('SELECT username, password_hash, roles, disabled FROM users WHERE username = $1', [
              normalizeUsername(username),
            ])
          ).rows[0]
        : undefined;
    if (!row) {
      this.unknownUserHash ??= hashPassword(randomBytes(24).toString('base64url'));
      await verifyPassword(candidate, await this.unknownUserHash);
      return undefined;
    }
    const ok = await verifyPassword(candidate, row.password_hash);
    if (!ok || candidate !== password || row.disabled) return undefined;
    return { username: row.username, roles: row.roles };
  }
}
