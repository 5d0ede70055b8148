/**
 * The hub's users and refresh tokens in its SQLite file: the `UserStorage` of user-storage.ts (the
 * upstream's is sync/upstream/auth/pg-storage.ts, on PostgreSQL). Each call runs to its end synchronously
 * (better-sqlite3); the writes that belong together are one transaction on the hub's connection.
 */
import type { Database, Statement } from '../store/database.js';
import type { LoginUser, User } from './user-service.js';
import type { NewRefreshToken, NewUserRow, StoredLogin, UserChange, UserStorage } from './user-storage.js';

type UserRow = { username: string; roles: string; created_at: number; updated_at: number };
type LoginRow = { username: string; roles: string; token_version: number };
type TakenRow = { username: string; token_version: number; expires_at: number };

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

const loginOf = (row: LoginRow): LoginUser => ({
  username: row.username,
  roles: parseRoles(row.roles),
  tokenVersion: row.token_version,
});

export class SqliteUserStorage implements UserStorage<User> {
  private readonly insertUser: Statement;
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
  private readonly takeRefresh: Statement<unknown[], TakenRow>;
  private readonly loginRow: Statement<unknown[], LoginRow>;
  private readonly dropRefresh: Statement;
  private readonly bump: (username: string, update: () => number) => boolean;

  constructor(private readonly db: Database) {
    this.insertUser = db.prepare(
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
      'SELECT username, roles, created_at, updated_at FROM users ORDER BY username LIMIT ?',
    ) as Statement<unknown[], UserRow>;
    this.updatePassword = db.prepare('UPDATE users SET password_hash = ?, updated_at = ? WHERE username = ?');
    this.updateRoles = db.prepare('UPDATE users SET roles = ?, updated_at = ? WHERE username = ?');
    this.bumpVersion = db.prepare('UPDATE users SET token_version = token_version + 1 WHERE username = ?');
    this.deleteUser = db.prepare('DELETE FROM users WHERE username = ?');
    this.insertRefresh = db.prepare(
      'INSERT INTO refresh_tokens (token_hash, username, token_version, expires_at, created_at) VALUES (?, ?, ?, ?, ?)',
    );
    this.trimRefresh = db.prepare(
      `DELETE FROM refresh_tokens WHERE username = @username AND token_hash NOT IN (
         SELECT token_hash FROM refresh_tokens WHERE username = @username
         ORDER BY created_at DESC, token_hash DESC LIMIT @keep)`,
    );
    this.expireRefresh = db.prepare('DELETE FROM refresh_tokens WHERE expires_at <= ?');
    this.takeRefresh = db.prepare(
      'DELETE FROM refresh_tokens WHERE token_hash = ? RETURNING username, token_version, expires_at',
    ) as Statement<unknown[], TakenRow>;
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
  }

  async get(username: string): Promise<User | undefined> {
    const row = this.byName.get(username);
    return row ? fromRow(row) : undefined;
  }

  async list(limit: number): Promise<User[]> {
    return this.all.all(limit).map(fromRow);
  }

  async login(username: string): Promise<StoredLogin | undefined> {
    const row = this.byName.get(username);
    return row && { ...loginOf(row), passwordHash: row.password_hash, disabled: false };
  }

  async insert(user: NewUserRow): Promise<User | undefined> {
    try {
      this.insertUser.run(
        user.username,
        user.passwordHash,
        JSON.stringify(user.roles),
        user.at,
        user.at,
        user.tokenVersion,
      );
    } catch (error) {
      if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') return undefined;
      throw error;
    }
    return { username: user.username, roles: user.roles, createdAt: user.at, updatedAt: user.at };
  }

  async endTokens(username: string, change?: UserChange): Promise<boolean> {
    return this.bump(username, () => {
      if (change?.passwordHash !== undefined)
        return this.updatePassword.run(change.passwordHash, change.at, username).changes;
      if (change?.roles !== undefined)
        return this.updateRoles.run(JSON.stringify(change.roles), change.at, username).changes;
      return this.versionOf.all(username).length;
    });
  }

  /** Removes the user and their refresh tokens (the hub's `meshhub user remove`). */
  remove(username: string): boolean {
    return this.db.transaction(() => {
      this.dropRefresh.run(username);
      return this.deleteUser.run(username).changes === 1;
    })();
  }

  async tokenVersion(username: string): Promise<number | undefined> {
    return this.versionOf.get(username);
  }

  async addRefreshToken(token: NewRefreshToken): Promise<void> {
    this.db.transaction(() => {
      this.expireRefresh.run(token.at);
      this.insertRefresh.run(token.hash, token.username, token.tokenVersion, token.expiresAt, token.at);
      this.trimRefresh.run({ username: token.username, keep: token.keep });
    })();
  }

  async takeRefreshToken(hash: string) {
    return this.db.transaction(() => {
      const taken = this.takeRefresh.get(hash);
      if (!taken) return undefined;
      const row = this.loginRow.get(taken.username);
      return { tokenVersion: taken.token_version, expiresAt: taken.expires_at, user: row && loginOf(row) };
    })();
  }
}
