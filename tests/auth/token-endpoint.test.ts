/**
 * The hub's own issuer over real HTTP: POST /api/v1/auth/token and /refresh,
 * GET /.well-known/jwks.json, login throttling per (username, address) and per address with
 * growing delays (an injected clock, never a sleep; clients on 127.0.0.2, 127.0.0.3, … are
 * other addresses), and no secret in the log.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHub, type Hub } from '../../hub/main.js';
import { loadConfig } from '../../hub/settings.js';
import { loopbackListeners } from '../../scripts/bench/lib/hub-env.js';
import { SIGNING_KEY_FILE } from '../../src/auth/local-issuer.js';
import { LoginThrottle } from '../../src/auth/login-throttle.js';
import { HubUserService } from '../../src/auth/user-service.js';
import { postFrom } from '../helpers/post-from.js';
import { expectTokensIssued } from '../helpers/token-answer.js';
import { call, type Json } from '../messaging/helpers.js';

const PASSWORD = 'lantern-on-the-ridge';

/** A hub with no radio, three users, and its log kept as text. */
async function startAuthHub(options: { logins?: LoginThrottle; env?: Record<string, string> } = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'meshhub-auth-'));
  const config = loadConfig({
    ...loopbackListeners(dataDir),
    RADIO: 'none',
    AUTH_TOKEN_TTL: '10m',
    ...options.env,
  });
  const log = { text: '' };
  const sink = new Writable({
    write(chunk, _enc, done) {
      log.text += chunk.toString();
      done();
    },
  });
  const hub = await createHub(config, {
    log: pino({ level: 'trace' }, sink),
    defaultMetrics: false,
    ...(options.logins ? { logins: options.logins } : {}),
  });
  await hub.start();
  const users = new HubUserService(hub.store.db);
  await users.add({ username: 'alice', password: PASSWORD, roles: ['subscriber'] });
  await users.add({ username: 'ops', password: PASSWORD, roles: ['admin', 'integration'] });
  await users.add({ username: 'locked', password: PASSWORD, roles: ['subscriber'] });
  return {
    hub,
    dataDir,
    log,
    baseUrl: `http://127.0.0.1:${hub.http.port}`,
    async stop() {
      await hub.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

let auth: Awaited<ReturnType<typeof startAuthHub>>;
let hub: Hub;
let baseUrl: string;

beforeAll(async () => {
  auth = await startAuthHub();
  ({ hub, baseUrl } = auth);
});
afterAll(() => auth?.stop());

const login = (body: unknown, headers: Record<string, string> = {}, url = baseUrl) =>
  call(url, 'POST', '/api/v1/auth/token', { body, headers });

describe('POST /api/v1/auth/token', () => {
  it('issues a bearer token with sub, iss, aud, iat, exp and roles', async () => {
    const res = await login({ username: 'ops', password: PASSWORD });
    expectTokensIssued(res);
    const claims = decodeJwt(res.body.access_token);
    expect(claims).toMatchObject({
      sub: 'ops',
      preferred_username: 'ops',
      iss: hub.identity.localIssuer.issuer,
      aud: 'meshhub',
      roles: ['admin', 'integration'],
    });
    expect(claims.exp! - claims.iat!).toBe(600);
    expect(decodeProtectedHeader(res.body.access_token)).toMatchObject({
      alg: 'EdDSA',
      kid: hub.identity.localIssuer.keyId,
    });
    const verified = await hub.identity.verifier.verify(res.body.access_token);
    expect(verified).toMatchObject({ subject: 'ops', roles: ['admin', 'integration'] });
  });

  it('accepts an OAuth-style form body and a username in another case', async () => {
    const res = await call(baseUrl, 'POST', '/api/v1/auth/token', {
      raw: new URLSearchParams({ grant_type: 'password', username: 'Alice', password: PASSWORD }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(200);
    expect(decodeJwt(res.body.access_token).sub).toBe('alice');
  });

  it('answers a wrong password and an unknown user with the same 401', async () => {
    const wrong = await login({ username: 'alice', password: 'not-the-password' });
    const unknown = await login({ username: 'nobody-here', password: 'not-the-password' });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    const { request_id: _a, ...a } = wrong.body;
    const { request_id: _b, ...b } = unknown.body;
    expect(a).toEqual(b);
    expect(a.detail).toBe('wrong username or password');
  });

  const badBodies: Array<[string, unknown, string]> = [
    ['no username', { password: 'x' }, 'username'],
    ['no password', { username: 'alice' }, 'password'],
    ['a number as password', { username: 'alice', password: 12345678 }, 'password'],
    ['an extra field', { username: 'alice', password: 'x', scope: 'all' }, 'scope'],
    [
      'another grant type',
      { username: 'alice', password: 'x', grant_type: 'client_credentials' },
      'grant_type',
    ],
  ];
  it.each(badBodies)('400 for %s, naming the field', async (_name, body, field) => {
    const res = await login(body);
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: Json) => e.field)).toContain(field);
  });

  it('415 for a text body, 400 for malformed JSON, 413 for a huge one', async () => {
    const text = await call(baseUrl, 'POST', '/api/v1/auth/token', {
      raw: 'alice:secret',
      headers: { 'content-type': 'text/plain' },
    });
    expect(text.status).toBe(415);
    expect((await call(baseUrl, 'POST', '/api/v1/auth/token', { raw: '{"username":' })).status).toBe(400);
    const huge = await login({ username: 'alice', password: 'p'.repeat(10_000) });
    expect(huge.status).toBe(413);
  });
});

describe('POST /api/v1/auth/refresh', () => {
  const refresh = (body: unknown) => call(baseUrl, 'POST', '/api/v1/auth/refresh', { body });
  const conversations = (token: string) => call(baseUrl, 'GET', '/api/v1/messages/conversations', { token });

  it('trades a refresh token for a new access token and a new refresh token; the old one is refused', async () => {
    const first = await login({ username: 'alice', password: PASSWORD });
    const next = await refresh({ refresh_token: first.body.refresh_token });
    expectTokensIssued(next);
    expect(next.body.refresh_token).not.toBe(first.body.refresh_token);
    expect(decodeJwt(next.body.access_token)).toMatchObject({ sub: 'alice', roles: ['subscriber'] });
    expect((await conversations(next.body.access_token)).status).toBe(200);
    // Used once: the old refresh token is gone.
    const again = await refresh({ refresh_token: first.body.refresh_token });
    expect(again.status).toBe(401);
    expect(again.body).toMatchObject({ status: 401, detail: expect.stringContaining('refresh token') });
    // An OAuth client's form works too.
    const form = await call(baseUrl, 'POST', '/api/v1/auth/refresh', {
      raw: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: next.body.refresh_token,
      }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(200);
  });

  it('refuses tokens and refresh tokens issued before a role change; fresh ones carry the new roles', async () => {
    const users = new HubUserService(hub.store.db);
    await users.add({ username: 'demoted', password: PASSWORD, roles: ['admin', 'subscriber'] });
    const before = await login({ username: 'demoted', password: PASSWORD });
    expect((await conversations(before.body.access_token)).status).toBe(200);
    await users.setRoles('demoted', ['subscriber']);
    const refused = await conversations(before.body.access_token);
    expect(refused.status).toBe(401);
    expect(refused.body.detail).toBe('the token has been revoked');
    expect(refused.headers.get('www-authenticate')).toContain('invalid_token');
    expect((await refresh({ refresh_token: before.body.refresh_token })).status).toBe(401);
    const after = await login({ username: 'demoted', password: PASSWORD });
    expect(decodeJwt(after.body.access_token).roles).toEqual(['subscriber']);
    expect((await conversations(after.body.access_token)).status).toBe(200);
  });

  const badBodies: Array<[string, unknown, string]> = [
    ['no refresh_token', {}, 'refresh_token'],
    ['a number', { refresh_token: 42 }, 'refresh_token'],
    ['an empty one', { refresh_token: '' }, 'refresh_token'],
    ['an extra field', { refresh_token: 'x', password: 'y' }, 'password'],
    ['another grant type', { refresh_token: 'x', grant_type: 'password' }, 'grant_type'],
  ];
  it.each(badBodies)('400 for %s, naming the field', async (_name, body, field) => {
    const res = await refresh(body);
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: Json) => e.field)).toContain(field);
  });

  it('401 for an unknown or malformed refresh token, 415 for text, 413 for a huge body', async () => {
    expect((await refresh({ refresh_token: 'A'.repeat(43) })).status).toBe(401);
    expect((await refresh({ refresh_token: 'not a token at all' })).status).toBe(401);
    const text = await call(baseUrl, 'POST', '/api/v1/auth/refresh', {
      raw: 'token',
      headers: { 'content-type': 'text/plain' },
    });
    expect(text.status).toBe(415);
    expect((await refresh({ refresh_token: 'x'.repeat(10_000) })).status).toBe(413);
  });
});

describe('signing key', () => {
  it('serves only the public key at /.well-known/jwks.json', async () => {
    const res = await call(baseUrl, 'GET', '/.well-known/jwks.json');
    expect(res.status).toBe(200);
    expect(res.body.keys).toHaveLength(1);
    const [key] = res.body.keys;
    expect(key).toMatchObject({
      kty: 'OKP',
      crv: 'Ed25519',
      alg: 'EdDSA',
      use: 'sig',
      kid: hub.identity.localIssuer.keyId,
    });
    expect(key.d).toBeUndefined();
  });

  it('keeps the private key in DATA_DIR with mode 0600 and never logs it or a token', async () => {
    const file = join(auth.dataDir, SIGNING_KEY_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const d = (JSON.parse(readFileSync(file, 'utf8')) as { privateJwk: { d: string } }).privateJwk.d;
    const token = (await login({ username: 'ops', password: PASSWORD })).body.access_token as string;
    expect(token).toMatch(/^ey/);
    await call(baseUrl, 'GET', '/api/v1/messages/conversations', {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(auth.log.text.length).toBeGreaterThan(0);
    expect(auth.log.text).not.toContain(d);
    expect(auth.log.text).not.toContain(PASSWORD);
    expect(auth.log.text).not.toContain(token);
  });
});

/** A login from a loopback address of our choosing: 127.0.0.2 and 127.0.0.3 are two clients. */
const loginFrom = (base: string, address: string, username: string, password: string) =>
  postFrom(`${base}/api/v1/auth/token`, address, { username, password });

describe('login throttling', () => {
  it('does not let a stranger failing from one address lock the user out on another (issue 23, finding 8)', async () => {
    const own = await startAuthHub();
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++)
        statuses.push((await loginFrom(own.baseUrl, '127.0.0.2', 'locked', `guess-${i}`)).status);
      expect(statuses.slice(0, 3)).toEqual([401, 401, 401]);
      expect(statuses.slice(3)).toContain(429);
      // The stranger's address is held back, even with the right password …
      expect((await loginFrom(own.baseUrl, '127.0.0.2', 'locked', PASSWORD)).status).toBe(429);
      // … the user on theirs is not.
      const real = await loginFrom(own.baseUrl, '127.0.0.3', 'locked', PASSWORD);
      expect(real.status).toBe(200);
      expect(real.body.access_token).toMatch(/^ey/);
    } finally {
      await own.stop();
    }
  });

  it('makes each further attempt wait longer, 429 problem details with Retry-After 1, 2, 4 s', async () => {
    let now = Date.now();
    const own = await startAuthHub({ logins: new LoginThrottle({ now: () => now }) });
    try {
      const attempt = (password: string) => loginFrom(own.baseUrl, '127.0.0.4', 'alice', password);
      for (let i = 0; i < 3; i++) expect((await attempt(`guess-${i}`)).status).toBe(401);
      const waits: string[] = [];
      for (let i = 0; i < 3; i++) {
        const refused = await attempt(PASSWORD);
        expect(refused.status).toBe(429);
        expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(refused.body).toMatchObject({
          status: 429,
          detail: expect.stringMatching(/try again in \d+ s/),
        });
        waits.push(refused.headers.get('retry-after')!);
        now += Number(refused.headers.get('retry-after')) * 1000;
        expect((await attempt(`late-guess-${i}`)).status).toBe(401);
      }
      expect(waits).toEqual(['1', '2', '4']);
      expect((await attempt(PASSWORD)).status).toBe(429);
      now += 8_000;
      expect((await attempt(PASSWORD)).status).toBe(200);
    } finally {
      await own.stop();
    }
  });

  it('makes an address that guesses across many accounts wait; other addresses go on', async () => {
    const own = await startAuthHub();
    try {
      // 20 failures per address: the 21st attempt from it waits, for any account.
      const statuses: number[] = [];
      for (let i = 0; i < 21; i++)
        statuses.push((await loginFrom(own.baseUrl, '127.0.0.5', `user-${i}`, 'guess')).status);
      expect(statuses.slice(0, 20).every((s) => s === 401)).toBe(true);
      expect(statuses[20]).toBe(429);
      const any = await loginFrom(own.baseUrl, '127.0.0.5', 'alice', PASSWORD);
      expect(any.status).toBe(429);
      expect(Number(any.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await loginFrom(own.baseUrl, '127.0.0.6', 'alice', PASSWORD)).status).toBe(200);
    } finally {
      await own.stop();
    }
  });
});
