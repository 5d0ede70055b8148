/**
 * Local accounts: scrypt hashes with a random salt, roles, and checkPassword that answers the
 * same way for an unknown user as for a wrong password.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hashPassword, verifyPassword } from '../../src/auth/passwords.js';
import { HubUserService, InvalidUserError, UserExistsError } from '../../src/auth/user-service.js';
import { closeDatabase, type Database, openDatabase } from '../../src/store/database.js';

let db: Database;
let users: HubUserService;
beforeEach(() => {
  db = openDatabase(':memory:');
  users = new HubUserService(db);
});
afterEach(() => closeDatabase(db));

describe('password hashes', () => {
  it('are scrypt with a random salt: two hashes of one password differ, both verify', async () => {
    const a = await hashPassword('correct horse battery');
    const b = await hashPassword('correct horse battery');
    expect(a).toMatch(/^scrypt\$15\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
    expect(await verifyPassword('correct horse battery', a)).toBe(true);
    expect(await verifyPassword('correct horse battery', b)).toBe(true);
    expect(await verifyPassword('correct horse batterY', a)).toBe(false);
  });

  it('an unreadable stored hash never verifies', async () => {
    for (const stored of [
      '',
      'plain',
      'scrypt$15$8$1$salt',
      'bcrypt$x$y$z$a$b',
      'scrypt$99$8$1$AAAAAAAAAAA$AAAA',
    ]) {
      expect(await verifyPassword('anything', stored)).toBe(false);
    }
  });
});

describe('HubUserService', () => {
  it('stores users with roles, never the password', async () => {
    const user = await users.add({
      username: 'Alice',
      password: 'long enough',
      roles: ['subscriber', 'device'],
    });
    expect(user).toMatchObject({ username: 'alice', roles: ['subscriber', 'device'] });
    expect(await users.get('ALICE')).toMatchObject({ username: 'alice', roles: ['subscriber', 'device'] });
    const row = db.prepare('SELECT password_hash FROM users').pluck().get() as string;
    expect(row).not.toContain('long enough');
    expect((await users.list()).map((u) => u.username)).toEqual(['alice']);
  });

  it('checkPassword: the user and roles for the right password; undefined otherwise', async () => {
    await users.add({ username: 'ops', password: 'long enough', roles: ['admin'] });
    const tokenVersion = await users.tokenVersion('ops');
    expect(tokenVersion).toEqual(expect.any(Number));
    expect(await users.checkPassword('ops', 'long enough')).toEqual({
      username: 'ops',
      roles: ['admin'],
      tokenVersion,
    });
    expect(await users.checkPassword('OPS', 'long enough')).toEqual({
      username: 'ops',
      roles: ['admin'],
      tokenVersion,
    });
    expect(await users.checkPassword('ops', 'long enougH')).toBeUndefined();
    expect(await users.checkPassword('nobody', 'long enough')).toBeUndefined();
    expect(await users.checkPassword('ops', 'x'.repeat(5000))).toBeUndefined();
    expect(await users.checkPassword('o'.repeat(500), 'long enough')).toBeUndefined();
  });

  it('refuses duplicates, bad names, bad roles and short passwords, naming the field', async () => {
    await users.add({ username: 'alice', password: 'long enough', roles: ['subscriber'] });
    await expect(users.add({ username: 'alice', password: 'long enough', roles: [] })).rejects.toBeInstanceOf(
      UserExistsError,
    );
    const field = async (input: Parameters<HubUserService['add']>[0]) =>
      users.add(input).then(
        () => 'accepted',
        (e: unknown) => (e instanceof InvalidUserError ? e.field : 'other'),
      );
    expect(await field({ username: 'al ice', password: 'long enough', roles: [] })).toBe('username');
    expect(await field({ username: 'idp:x', password: 'long enough', roles: [] })).toBe('username');
    expect(await field({ username: '', password: 'long enough', roles: [] })).toBe('username');
    expect(await field({ username: 'bob', password: 'short', roles: [] })).toBe('password');
    expect(await field({ username: 'bob', password: 'long enough', roles: ['Admin!'] })).toBe('roles');
    expect(await users.list()).toHaveLength(1);
  });

  it('changes passwords and roles, and removes users', async () => {
    await users.add({ username: 'bob', password: 'first password', roles: ['subscriber'] });
    expect(await users.setPassword('bob', 'second password')).toBe(true);
    expect(await users.checkPassword('bob', 'first password')).toBeUndefined();
    expect(await users.checkPassword('bob', 'second password')).toBeDefined();
    expect(await users.setRoles('bob', ['integration'])).toBe(true);
    expect((await users.get('bob'))?.roles).toEqual(['integration']);
    expect(await users.remove('bob')).toBe(true);
    expect(await users.remove('bob')).toBe(false);
    expect(await users.setPassword('bob', 'third password')).toBe(false);
  });

  it('bumps the token version on a password or role change and on revokeTokens; a new namesake starts elsewhere', async () => {
    await users.add({ username: 'eve', password: 'first password', roles: ['subscriber'] });
    const seen = [await users.tokenVersion('eve')];
    await users.setPassword('eve', 'second password');
    seen.push(await users.tokenVersion('eve'));
    await users.setRoles('eve', ['admin']);
    seen.push(await users.tokenVersion('eve'));
    expect(await users.revokeTokens('eve')).toBe(true);
    seen.push(await users.tokenVersion('eve'));
    expect(new Set(seen).size).toBe(4);
    await users.remove('eve');
    expect(await users.tokenVersion('eve')).toBeUndefined();
    expect(await users.revokeTokens('eve')).toBe(false);
    await users.add({ username: 'eve', password: 'first password', roles: ['admin'] });
    expect(seen).not.toContain(await users.tokenVersion('eve'));
  });

  it('refresh tokens: single use, stored hashed, void after a bump, the expired ones and the surplus dropped', async () => {
    await users.add({ username: 'fay', password: 'long enough', roles: ['subscriber'] });
    const fay = (await users.checkPassword('fay', 'long enough'))!;
    const now = Date.now();
    const token = await users.createRefreshToken(fay, now + 60_000);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const stored = db.prepare('SELECT token_hash FROM refresh_tokens').pluck().all();
    expect(stored).toHaveLength(1);
    expect(stored).not.toContain(token);
    expect(await users.redeemRefreshToken(token, now)).toEqual(fay);
    expect(await users.redeemRefreshToken(token, now)).toBeUndefined();
    const expiring = await users.createRefreshToken(fay, now + 1_000);
    expect(await users.redeemRefreshToken(expiring, now + 1_000)).toBeUndefined();
    const beforeBump = await users.createRefreshToken(fay, now + 60_000);
    await users.revokeTokens('fay');
    expect(await users.redeemRefreshToken(beforeBump, now)).toBeUndefined();
    const bumped = { ...fay, tokenVersion: (await users.tokenVersion('fay'))! };
    for (let i = 0; i < 30; i++) await users.createRefreshToken(bumped, Date.now() + 60_000);
    expect(db.prepare('SELECT count(*) FROM refresh_tokens').pluck().get()).toBe(20);
    expect(await users.redeemRefreshToken('not a token', now)).toBeUndefined();
  });
});
