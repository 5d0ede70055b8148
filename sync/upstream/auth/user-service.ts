/**
 * The upstream's local accounts (table `users`, ../db/schema.ts): internet subscribers and admins.
 * The rules are the hub's, the one `UserService` of src/auth/user-service.ts (lower-case usernames
 * of `a-z 0-9 . _ -`, role names checked, scrypt hashes, and `checkPassword` costs one scrypt
 * whether or not the user exists), over its storage on PostgreSQL (pg-storage.ts).
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
import type pg from 'pg';
import {
  InvalidUserError,
  normalizeUsername,
  UserExistsError,
  UserService,
} from '../../../src/auth/user-service.js';
import { type CommandBody, userCommandBody } from '../../protocol.js';
import { withTransaction } from '../db/pool.js';
import { enqueueCommand } from '../downlink-queue.js';
import { PgUserStorage, type UpstreamUser } from './pg-storage.js';

export { InvalidUserError, UserExistsError };

/** The upstream's users: the one user service over PostgreSQL, with disabling (told to the sites). */
export class UpstreamUserService extends UserService<UpstreamUser> {
  constructor(
    private readonly pool: pg.Pool,
    now: () => number = Date.now,
  ) {
    super(new PgUserStorage(pool), now);
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
}
