/**
 * The hub's own issuer over real HTTP: POST /api/v1/auth/token, GET /.well-known/jwks.json,
 * login throttling per username and per client address, and no secret in the log.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHub, type Hub } from '../../hub/main.js';
import { SIGNING_KEY_FILE } from '../../src/auth/local-issuer.js';
import { UserRepository } from '../../src/auth/users.js';
import { loadConfig } from '../../src/config/load.js';
import { call, type Json } from '../messaging/helpers.js';

const PASSWORD = 'lantern-on-the-ridge';

/** A hub with no radio, three users, and its log kept as text. */
async function startAuthHub() {
  const dataDir = mkdtempSync(join(tmpdir(), 'meshhub-auth-'));
  const config = loadConfig({
    DATA_DIR: dataDir,
    HTTP_HOST: '127.0.0.1',
    HTTP_PORT: '0',
    MQTT_PORT: '0',
    RADIO: 'none',
    AUTH_TOKEN_TTL: '10m',
  });
  const log = { text: '' };
  const sink = new Writable({
    write(chunk, _enc, done) {
      log.text += chunk.toString();
      done();
    },
  });
  const hub = await createHub(config, { log: pino({ level: 'trace' }, sink), defaultMetrics: false });
  await hub.start();
  const users = new UserRepository(hub.store.db);
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
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: 600 });
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

// Each throttling test uses up its client address (loopback), so each gets a hub of its own.
describe('login throttling', () => {
  let own: Awaited<ReturnType<typeof startAuthHub>>;
  beforeEach(async () => {
    own = await startAuthHub();
  });
  afterEach(() => own?.stop());

  it('throttles a username after 5 failures: 429 with Retry-After, even for the right password', async () => {
    const attempt = (username: string, password: string) => login({ username, password }, {}, own.baseUrl);
    for (let i = 0; i < 5; i++) expect((await attempt('locked', `guess-${i}`)).status).toBe(401);
    const blocked = await attempt('locked', PASSWORD);
    expect(blocked.status).toBe(429);
    const retryAfter = Number(blocked.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(800);
    expect(retryAfter).toBeLessThanOrEqual(900);
    // Another account from the same address is not locked by it.
    expect((await attempt('alice', PASSWORD)).status).toBe(200);
  });

  it('throttles an address that guesses across many accounts', async () => {
    const attempt = (username: string, password: string) => login({ username, password }, {}, own.baseUrl);
    // 20 failures per address per 15 minutes: the 21st attempt is refused.
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) statuses.push((await attempt(`user-${i}`, 'guess')).status);
    expect(statuses.slice(0, 20).every((s) => s === 401)).toBe(true);
    expect(statuses[20]).toBe(429);
    const any = await attempt('alice', PASSWORD);
    expect(any.status).toBe(429);
    expect(Number(any.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
