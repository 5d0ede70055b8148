/**
 * The upstream's users and refresh tokens in PostgreSQL (tables `users`, `refresh_tokens`,
 * ../db/schema.ts): the `UserStorage` of src/auth/user-storage.ts, over which
 * user-service.ts runs the hub's rules.
 */
import type pg from 'pg';
import type { LoginUser, User } from '../../../src/auth/user-service.js';
import type {
  NewRefreshToken,
  NewUserRow,
  StoredLogin,
  UserChange,
  UserStorage,
} from '../../../src/auth/user-storage.js';
import { withTransaction } from '../db/pool.js';

export interface UpstreamUser extends User {
  disabled: boolean;
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

/** The users and refresh tokens in PostgreSQL, shared by every upstream process. */
export class PgUserStorage implements UserStorage<UpstreamUser> {
  constructor(private readonly pool: pg.Pool) {}

  async get(username: string): Promise<UpstreamUser | undefined> {
    const result = await this.pool.query<UserRow>(`SELECT ${COLUMNS} FROM users WHERE username = $1`, [
      username,
    ]);
    const row = result.rows[0];
    return row ? fromRow(row) : undefined;
  }

  async list(limit: number): Promise<UpstreamUser[]> {
    const result = await this.pool.query<UserRow>(
      `SELECT ${COLUMNS} FROM users ORDER BY username LIMIT ${Math.trunc(limit)}`,
    );
    return result.rows.map(fromRow);
  }

  async login(username: string): Promise<StoredLogin | undefined> {
    const { rows } = await this.pool.query<{
      username: string;
      password_hash: string;
      roles: string[];
      disabled: boolean;
      token_version: number;
    }>('SELECT username, password_hash, roles, disabled, token_version FROM users WHERE username = $1', [
      username,
    ]);
    const row = rows[0];
    return (
      row && {
        username: row.username,
        roles: row.roles,
        tokenVersion: row.token_version,
        passwordHash: row.password_hash,
        disabled: row.disabled,
      }
    );
  }

  async insert(user: NewUserRow): Promise<UpstreamUser | undefined> {
    const result = await this.pool.query<UserRow>(
      `INSERT INTO users (username, password_hash, roles, disabled, created_at, updated_at, token_version)
       VALUES ($1, $2, $3, false, $4, $4, $5)
       ON CONFLICT (username) DO NOTHING
       RETURNING ${COLUMNS}`,
      [user.username, user.passwordHash, user.roles, user.at, user.tokenVersion],
    );
    const row = result.rows[0];
    return row ? fromRow(row) : undefined;
  }

  async endTokens(username: string, change?: UserChange): Promise<boolean> {
    const set =
      change?.passwordHash !== undefined
        ? { sql: 'password_hash = $2, updated_at = $3, ', values: [change.passwordHash, change.at] }
        : change?.roles !== undefined
          ? { sql: 'roles = $2, updated_at = $3, ', values: [change.roles, change.at] }
          : { sql: '', values: [] };
    const result = await this.pool.query(
      `UPDATE users SET ${set.sql}token_version = token_version + 1 WHERE username = $1`,
      [username, ...set.values],
    );
    if (result.rowCount !== 1) return false;
    // After the bump the user's refresh tokens are void, so they go.
    await this.pool.query('DELETE FROM refresh_tokens WHERE username = $1', [username]);
    return true;
  }

  async tokenVersion(username: string): Promise<number | undefined> {
    const result = await this.pool.query<{ token_version: number }>(
      'SELECT token_version FROM users WHERE username = $1 AND NOT disabled',
      [username],
    );
    return result.rows[0]?.token_version;
  }

  async addRefreshToken(token: NewRefreshToken): Promise<void> {
    await withTransaction(this.pool, async (client) => {
      await client.query('DELETE FROM refresh_tokens WHERE expires_at <= $1', [token.at]);
      await client.query(
        `INSERT INTO refresh_tokens (token_hash, username, token_version, expires_at, created_at)
         VALUES ($1, $2, $3, $4, $5)`,
        [token.hash, token.username, token.tokenVersion, token.expiresAt, token.at],
      );
      await client.query(
        `DELETE FROM refresh_tokens WHERE username = $1 AND token_hash NOT IN (
           SELECT token_hash FROM refresh_tokens WHERE username = $1
           ORDER BY created_at DESC, token_hash DESC LIMIT $2)`,
        [token.username, token.keep],
      );
    });
  }

  async takeRefreshToken(hash: string) {
    // The DELETE makes it single use: of two concurrent redeems, one gets the row.
    const taken = await this.pool.query<{ username: string; token_version: number; expires_at: number }>(
      'DELETE FROM refresh_tokens WHERE token_hash = $1 RETURNING username, token_version, expires_at',
      [hash],
    );
    const row = taken.rows[0];
    if (!row) return undefined;
    const found = await this.pool.query<{ username: string; roles: string[]; token_version: number }>(
      'SELECT username, roles, token_version FROM users WHERE username = $1 AND NOT disabled',
      [row.username],
    );
    const u = found.rows[0];
    const user: LoginUser | undefined = u && {
      username: u.username,
      roles: u.roles,
      tokenVersion: u.token_version,
    };
    return { tokenVersion: row.token_version, expiresAt: Number(row.expires_at), user };
  }
}
