/**
 * The upstream's own issuer over real HTTP, as on a hub: POST /api/v1/auth/token (JSON or an
 * OAuth form) for users in PostgreSQL, the same 400/401/429 problems, tokens the upstream's
 * verifier (and so its messaging API) accepts, /.well-known/jwks.json; disabled users get no
 * token, and disabling one tells every active site in the same transaction. Issue 23: a
 * stranger failing from one address does not lock the user out on another (findings 8), delays
 * grow (an injected clock), and tokens and refresh tokens end with a password or role change,
 * disabling or a revocation (finding 14).
 */
import { rmSync } from 'node:fs';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  InvalidUserError,
  UpstreamUserService,
  UserExistsError,
} from '../../../sync/upstream/auth/user-service.js';
import type { UpstreamServer } from '../../../sync/upstream/main.js';
import { postFrom } from '../../helpers/post-from.js';
import { skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';
import { expectTokensIssued } from '../../helpers/token-answer.js';
import { startScratchUpstream } from './helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: tests read bodies of many shapes and assert on them
type Json = any;

const skip = await skipWithoutPostgres();
const PASSWORD = 'lantern-on-the-ridge';

describe.skipIf(skip)('upstream auth', () => {
  let schema: TestSchema;
  let dataDir: string;
  let upstream: UpstreamServer;
  let users: UpstreamUserService;
  let base: string;
  /** The login throttle's clock: the real one until a test moves it. */
  let clockOffset = 0;

  async function token(
    body: string,
    contentType = 'application/json',
  ): Promise<{ status: number; headers: Headers; body: Json }> {
    const res = await fetch(`${base}/api/v1/auth/token`, {
      method: 'POST',
      headers: { 'content-type': contentType },
      body,
    });
    return { status: res.status, headers: res.headers, body: await res.json() };
  }

  beforeAll(async () => {
    ({ schema, dataDir, upstream, base } = await startScratchUpstream(
      'auth',
      { AUTH_TOKEN_TTL: '10m' },
      { now: () => Date.now() + clockOffset },
    ));
    users = new UpstreamUserService(upstream.pool);
    await users.add({ username: 'Alice', password: PASSWORD, roles: ['subscriber'] });
    await users.add({ username: 'ops', password: PASSWORD, roles: ['admin', 'subscriber'] });
  });

  afterAll(async () => {
    await upstream?.stop();
    await schema?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('issues a token for the right password that the upstream’s verifier accepts', async () => {
    const res = await token(JSON.stringify({ username: 'alice', password: PASSWORD }));
    expectTokensIssued(res);
    const verified = await upstream.identity.verifier.verify(res.body.access_token);
    expect(upstream.identity.principalOf(verified)).toEqual({
      id: 'alice',
      name: 'alice',
      roles: ['subscriber'],
      local: true,
    });
    expect(decodeJwt(res.body.access_token).iss).toBe(upstream.identity.localIssuer.issuer);

    const jwks = await (await fetch(`${base}/.well-known/jwks.json`)).json();
    expect(jwks).toEqual(upstream.identity.localIssuer.jwks());
  });

  it('takes an OAuth password-grant form too', async () => {
    const res = await token(
      new URLSearchParams({ grant_type: 'password', username: 'ops', password: PASSWORD }).toString(),
      'application/x-www-form-urlencoded',
    );
    expect(res.status).toBe(200);
    expect(decodeJwt(res.body.access_token).roles).toEqual(['admin', 'subscriber']);
  });

  it('refuses a bad body with a 400 naming the fields, a wrong password with a 401', async () => {
    const bad = await token(JSON.stringify({ username: 'alice', extra: 1 }));
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: Json) => e.field).sort()).toEqual(['extra', 'password']);
    const wrong = await token(JSON.stringify({ username: 'ops', password: 'not-the-password' }));
    expect(wrong.status).toBe(401);
    expect(wrong.body.detail).toBe('wrong username or password');
    expect(wrong.headers.get('www-authenticate')).toBe('Bearer realm="meshhub"');
    const nobody = await token(JSON.stringify({ username: 'nobody', password: PASSWORD }));
    expect(nobody.status).toBe(401);
    expect(nobody.body.detail).toBe('wrong username or password');
    const text = await token('username=alice', 'text/plain');
    expect(text.status).toBe(415);
  });

  const loginFrom = (address: string, username: string, password: string) =>
    postFrom(`${base}/api/v1/auth/token`, address, { username, password });
  const conversations = async (bearer: string) =>
    (
      await fetch(`${base}/api/v1/messages/conversations`, {
        headers: { authorization: `Bearer ${bearer}` },
      })
    ).status;
  const refresh = (refreshToken: string) =>
    postFrom(`${base}/api/v1/auth/refresh`, '127.0.0.1', {
      refresh_token: refreshToken,
    });

  it('does not let a stranger failing from one address lock the user out on another', async () => {
    await users.add({ username: 'target', password: PASSWORD, roles: ['subscriber'] });
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++)
      statuses.push((await loginFrom('127.0.0.2', 'target', `guess-${i}-guess`)).status);
    expect(statuses.slice(0, 3)).toEqual([401, 401, 401]);
    expect(statuses.slice(3)).toContain(429);
    const throttled = await loginFrom('127.0.0.2', 'target', PASSWORD);
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await loginFrom('127.0.0.3', 'target', PASSWORD)).status).toBe(200);
  });

  it('makes each further failed attempt wait longer: Retry-After 1, 2, 4 s', async () => {
    await users.add({ username: 'patient', password: PASSWORD, roles: ['subscriber'] });
    const attempt = (password: string) => loginFrom('127.0.0.4', 'patient', password);
    for (let i = 0; i < 3; i++) expect((await attempt(`guess-${i}-guess`)).status).toBe(401);
    const waits: string[] = [];
    for (let i = 0; i < 3; i++) {
      const refused = await attempt(PASSWORD);
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ status: 429 });
      waits.push(refused.headers.get('retry-after')!);
      clockOffset += Number(refused.headers.get('retry-after')) * 1000;
      expect((await attempt(`late-guess-${i}`)).status).toBe(401);
    }
    expect(waits).toEqual(['1', '2', '4']);
    clockOffset += 8_000;
    expect((await attempt(PASSWORD)).status).toBe(200);
  });

  it('ends tokens and refresh tokens with a password or role change, disabling and revokeTokens', async () => {
    await users.add({ username: 'tenant', password: PASSWORD, roles: ['subscriber'] });
    const signIn = async (password = PASSWORD) => {
      const res = await loginFrom('127.0.0.7', 'tenant', password);
      expect(res.status).toBe(200);
      expect(await conversations(res.body.access_token)).toBe(200);
      return res.body as { access_token: string; refresh_token: string };
    };
    const changes: Array<[string, () => Promise<unknown>, string?]> = [
      ['revokeTokens', () => users.revokeTokens('tenant')],
      ['setRoles', () => users.setRoles('tenant', ['subscriber', 'device'])],
      ['setPassword', () => users.setPassword('tenant', 'a-second-password'), 'a-second-password'],
    ];
    let password = PASSWORD;
    for (const [what, change, next] of changes) {
      const before = await signIn(password);
      await change();
      expect([what, await conversations(before.access_token)]).toEqual([what, 401]);
      expect([what, (await refresh(before.refresh_token)).status]).toEqual([what, 401]);
      password = next ?? password;
    }
    const before = await signIn(password);
    await users.disable('tenant');
    expect(await conversations(before.access_token)).toBe(401);
    expect((await refresh(before.refresh_token)).status).toBe(401);
    await users.enable('tenant');
    expect(await conversations(before.access_token)).toBe(401);
    await signIn(password);
  });

  it('rotates refresh tokens: a new pair for each, the old one refused; bad input is a 400', async () => {
    await users.add({ username: 'stayer', password: PASSWORD, roles: ['subscriber'] });
    const first = (await loginFrom('127.0.0.8', 'stayer', PASSWORD)).body;
    expect(first.refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const second = await refresh(first.refresh_token);
    expect(second.status).toBe(200);
    expect(second.body.refresh_token).not.toBe(first.refresh_token);
    expect(await conversations(second.body.access_token)).toBe(200);
    expect((await refresh(first.refresh_token)).status).toBe(401);
    expect((await refresh(second.body.refresh_token)).status).toBe(200);
    const bad = await postFrom(`${base}/api/v1/auth/refresh`, '127.0.0.1', { token: 'x' });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: Json) => e.field)).toEqual(['refresh_token', 'token']);
  });

  it('gives a disabled user no token, and tells every active site in the same transaction', async () => {
    await users.add({ username: 'leaver', password: PASSWORD, roles: ['subscriber'] });
    await upstream.pool.query(
      `INSERT INTO sites (site_id, public_jwks, created_at, revoked_at)
       VALUES ('s1', '{"keys":[]}', 1, NULL), ('s2', '{"keys":[]}', 1, NULL), ('s3', '{"keys":[]}', 1, 5)`,
    );
    expect(await users.disable('Leaver')).toBe(2);
    const queued = await upstream.pool.query(
      `SELECT site_id, kind, body FROM downlink WHERE kind = 'user' ORDER BY site_id`,
    );
    expect(queued.rows).toEqual([
      { site_id: 's1', kind: 'user', body: { principal: 'leaver', display_name: 'leaver', disabled: true } },
      { site_id: 's2', kind: 'user', body: { principal: 'leaver', display_name: 'leaver', disabled: true } },
    ]);
    const res = await token(JSON.stringify({ username: 'leaver', password: PASSWORD }));
    expect(res.status).toBe(401);
    expect((await users.get('leaver'))?.disabled).toBe(true);
    expect(await users.disable('nobody')).toBeUndefined();

    expect(await users.enable('leaver')).toBe(true);
    expect((await token(JSON.stringify({ username: 'leaver', password: PASSWORD }))).status).toBe(200);
  });

  it('checks usernames, roles and passwords as the hub does', async () => {
    await expect(users.add({ username: 'alice', password: PASSWORD, roles: [] })).rejects.toBeInstanceOf(
      UserExistsError,
    );
    await expect(users.add({ username: 'a:b', password: PASSWORD, roles: [] })).rejects.toBeInstanceOf(
      InvalidUserError,
    );
    await expect(users.add({ username: 'shorty', password: 'short', roles: [] })).rejects.toThrow(
      'password must be at least 8 characters',
    );
    await expect(users.add({ username: 'roley', password: PASSWORD, roles: ['Bad Role'] })).rejects.toThrow(
      'roles "Bad Role" is not a valid role name',
    );
    expect(await users.setRoles('ops', ['admin'])).toBe(true);
    expect((await users.get('ops'))?.roles).toEqual(['admin']);
    expect(await users.setPassword('ops', 'a-new-long-password')).toBe(true);
    expect((await token(JSON.stringify({ username: 'ops', password: 'a-new-long-password' }))).status).toBe(
      200,
    );
    expect(await users.setPassword('nobody', 'a-new-long-password')).toBe(false);
    expect((await users.list()).map((u) => u.username)).toContain('alice');
  });
});
