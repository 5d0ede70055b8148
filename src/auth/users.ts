/**
 * Local accounts (subscribers, admins, and free-form roles such as `device`, `integration`,
 * `ingest` for machine users of MQTT and the ingest API). Shared by the messaging API, the MQTT
 * broker and the audit plugin: keep this API stable.
 *
 * Usernames are lower-case (`Alice` logs in as `alice`), 1–32 of `a-z 0-9 . _ -`, so they fit an
 * `@name` prefix in a radio text and an MQTT topic segment. `checkPassword` takes the same time
 * for an unknown user as for a wrong password, so it does not tell which usernames exist.
 */
import type { Database, Statement } from '../store/database.js';
import { hashPassword, passwordProblem, verifyPassword } from './passwords.js';

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

function fromRow(row: UserRow): User {
  let roles: string[] = [];
  try {
    const parsed: unknown = JSON.parse(row.roles);
    if (Array.isArray(parsed)) roles = parsed.filter((r): r is string => typeof r === 'string');
  } catch {
    roles = [];
  }
  return { username: row.username, roles, createdAt: row.created_at, updatedAt: row.updated_at };
}

// Compared against for unknown users: random bytes in the format of DEFAULT_SCRYPT, so the
// unknown-user path costs exactly one scrypt like the known-user path.
const UNKNOWN_USER_HASH = 'scrypt$15$8$1$wmaetCr--UtZ-ujpCCMSGQ$JEYs-ufwUmmpWoDLFlqfPA6jOq9gkM8d-wCzuRcQoeQ';

export class UserRepository {
  private readonly insert: Statement;
  private readonly byName: Statement<unknown[], UserRow & { password_hash: string }>;
  private readonly all: Statement<unknown[], UserRow>;
  private readonly updatePassword: Statement;
  private readonly updateRoles: Statement;
  private readonly deleteUser: Statement;

  constructor(db: Database) {
    this.insert = db.prepare(
      'INSERT INTO users (username, password_hash, roles, created_at, updated_at) VALUES (?, ?, ?, ?, ?)',
    );
    this.byName = db.prepare(
      'SELECT username, password_hash, roles, created_at, updated_at FROM users WHERE username = ?',
    ) as Statement<unknown[], UserRow & { password_hash: string }>;
    this.all = db.prepare(
      'SELECT username, roles, created_at, updated_at FROM users ORDER BY username LIMIT 10000',
    ) as Statement<unknown[], UserRow>;
    this.updatePassword = db.prepare('UPDATE users SET password_hash = ?, updated_at = ? WHERE username = ?');
    this.updateRoles = db.prepare('UPDATE users SET roles = ?, updated_at = ? WHERE username = ?');
    this.deleteUser = db.prepare('DELETE FROM users WHERE username = ?');
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
      this.insert.run(username, hash, JSON.stringify(roles), now, now);
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
    return this.updatePassword.run(hash, Date.now(), normalizeUsername(username)).changes === 1;
  }

  setRoles(username: string, roles: readonly string[]): boolean {
    const checked = checkRoles(roles);
    return (
      this.updateRoles.run(JSON.stringify(checked), Date.now(), normalizeUsername(username)).changes === 1
    );
  }

  remove(username: string): boolean {
    return this.deleteUser.run(normalizeUsername(username)).changes === 1;
  }

  /**
   * The user and roles when the password is right, else undefined. An unknown user costs the
   * same scrypt as a known one (against a throwaway hash), so timing does not reveal accounts.
   */
  async checkPassword(username: string, password: string): Promise<AuthenticatedUser | undefined> {
    if (typeof username !== 'string' || typeof password !== 'string') return undefined;
    const row = username.length <= 64 ? this.byName.get(normalizeUsername(username)) : undefined;
    const candidate = password.length <= 1024 ? password : '';
    if (!row) {
      await verifyPassword(candidate, UNKNOWN_USER_HASH);
      return undefined;
    }
    const ok = await verifyPassword(candidate, row.password_hash);
    if (!ok || candidate !== password) return undefined;
    return { username: row.username, roles: fromRow(row).roles };
  }
}
