import { createServer, type Server } from 'node:http';
import { exportJWK, generateKeyPair, type JWK, SignJWT, UnsecuredJWT } from 'jose';

type CryptoKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthError, bearerToken, createTokenVerifier, rolesFrom } from '../../src/auth/jwt-verifier.js';

const ISS = 'https://hub.example/local';
let privateKey: CryptoKey;
let publicJwk: JWK;
let otherKey: CryptoKey;
let server: Server;
let jwksUrl: URL;

beforeAll(async () => {
  const pair = await generateKeyPair('ES256', { extractable: true });
  privateKey = pair.privateKey;
  publicJwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  otherKey = (await generateKeyPair('ES256')).privateKey;
  server = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [publicJwk] }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  jwksUrl = new URL(`http://127.0.0.1:${(server.address() as { port: number }).port}/jwks.json`);
});
afterAll(() => new Promise((r) => server.close(r)));

const sign = (
  claims: Record<string, unknown> = {},
  opts: { key?: CryptoKey; iss?: string; exp?: string | number; kid?: string } = {},
) =>
  new SignJWT({ roles: ['subscriber'], ...claims })
    .setProtectedHeader({ alg: 'ES256', kid: opts.kid ?? 'k1' })
    .setIssuer(opts.iss ?? ISS)
    .setSubject('user-1')
    .setAudience('meshhub')
    .setIssuedAt()
    .setExpirationTime(opts.exp ?? '5m')
    .sign(opts.key ?? privateKey);

const local = () =>
  createTokenVerifier([{ issuer: ISS, audience: 'meshhub', keys: { keys: [publicJwk] } }], {
    clockToleranceSeconds: 0,
  });

async function reasonOf(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(AuthError);
  return (e as AuthError).reason;
}

describe('createTokenVerifier', () => {
  it('accepts a valid token and reads subject, name and roles', async () => {
    const id = await local().verify(await sign({ preferred_username: 'alice' }));
    expect(id).toMatchObject({ subject: 'user-1', username: 'alice', roles: ['subscriber'], issuer: ISS });
  });

  it('verifies against a remote JWKS over loopback', async () => {
    const v = createTokenVerifier([
      { issuer: 'https://idp.example', keys: jwksUrl, rolesClaim: 'realm_access.roles' },
    ]);
    const token = await sign({ realm_access: { roles: ['admin'] } }, { iss: 'https://idp.example' });
    expect((await v.verify(token)).roles).toEqual(['admin']);
  });

  it('refuses alg none', async () => {
    const token = new UnsecuredJWT({ sub: 'user-1', roles: ['admin'] })
      .setIssuer(ISS)
      .setAudience('meshhub')
      .setExpirationTime('5m')
      .encode();
    expect(await reasonOf(local().verify(token))).toBe('algorithm_not_allowed');
  });

  it('refuses algorithm confusion: HS256 signed with the public key as secret', async () => {
    const secret = new TextEncoder().encode(JSON.stringify(publicJwk));
    const token = await new SignJWT({ roles: ['admin'] })
      .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
      .setIssuer(ISS)
      .setSubject('user-1')
      .setAudience('meshhub')
      .setExpirationTime('5m')
      .sign(secret);
    expect(await reasonOf(local().verify(token))).toBe('algorithm_not_allowed');
  });

  it('refuses an expired token', async () => {
    expect(await reasonOf(local().verify(await sign({}, { exp: Math.floor(Date.now() / 1000) - 60 })))).toBe(
      'expired',
    );
  });

  it('refuses a token that is not valid yet', async () => {
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(ISS)
      .setSubject('user-1')
      .setAudience('meshhub')
      .setNotBefore(Math.floor(Date.now() / 1000) + 600)
      .setExpirationTime('20m')
      .sign(privateKey);
    expect(await reasonOf(local().verify(token))).toBe('not_yet_valid');
  });

  it('refuses a wrong issuer and a wrong audience', async () => {
    expect(await reasonOf(local().verify(await sign({}, { iss: 'https://evil.example' })))).toBe(
      'wrong_issuer',
    );
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(ISS)
      .setSubject('user-1')
      .setAudience('someone-else')
      .setExpirationTime('5m')
      .sign(privateKey);
    expect(await reasonOf(local().verify(token))).toBe('wrong_audience');
  });

  it('refuses a token signed by another key', async () => {
    expect(await reasonOf(local().verify(await sign({}, { key: otherKey })))).toBe('bad_signature');
    expect(await reasonOf(local().verify(await sign({}, { key: otherKey, kid: 'k9' })))).toBe('unknown_key');
  });

  it('refuses garbage and a tampered payload', async () => {
    expect(await reasonOf(local().verify('not.a.jwt'))).toBe('malformed');
    expect(await reasonOf(local().verify(''))).toBe('missing');
    const [h, , s] = (await sign()).split('.');
    const forged = Buffer.from(
      JSON.stringify({ sub: 'user-1', iss: ISS, aud: 'meshhub', roles: ['admin'], exp: 9999999999 }),
    ).toString('base64url');
    expect(await reasonOf(local().verify(`${h}.${forged}.${s}`))).toBe('bad_signature');
  });

  it('refuses a plain-http JWKS URL that is not loopback', () => {
    expect(() => createTokenVerifier([{ issuer: 'x', keys: new URL('http://idp.example/jwks') }])).toThrow(
      /https/,
    );
  });
});

describe('helpers', () => {
  it('bearerToken parses the Authorization header', () => {
    expect(bearerToken('Bearer abc.def.ghi')).toBe('abc.def.ghi');
    expect(bearerToken('bearer abc')).toBe('abc');
    expect(bearerToken('Basic dXNlcjpwYXNz')).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });

  it('rolesFrom reads arrays, space-separated strings and nested paths', () => {
    expect(rolesFrom({ roles: ['a', 'b', 3] })).toEqual(['a', 'b']);
    expect(rolesFrom({ scope: 'read write' }, 'scope')).toEqual(['read', 'write']);
    expect(rolesFrom({ realm_access: { roles: ['x'] } }, 'realm_access.roles')).toEqual(['x']);
    expect(rolesFrom({}, 'roles')).toEqual([]);
  });
});
