import { generateKeyPair, SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthError, bearerToken, createTokenVerifier, rolesFrom } from '../../src/auth/jwt-verifier.js';
import { type PrivateKey as CryptoKey, type JwksServer, startJwksServer } from './helpers.js';

const ISS = 'https://hub.example/local';
let jwks: JwksServer;
let otherKey: CryptoKey;

beforeAll(async () => {
  jwks = await startJwksServer('k1', '/jwks.json');
  otherKey = (await generateKeyPair('ES256')).privateKey;
});
afterAll(() => jwks.close());

const sign = (
  claims: Record<string, unknown> = {},
  opts: { key?: CryptoKey; iss?: string; aud?: string; exp?: string | number; kid?: string } = {},
) =>
  new SignJWT({ roles: ['subscriber'], ...claims })
    .setProtectedHeader({ alg: 'ES256', kid: opts.kid ?? 'k1' })
    .setIssuer(opts.iss ?? ISS)
    .setSubject('user-1')
    .setAudience(opts.aud ?? 'meshhub')
    .setIssuedAt()
    .setExpirationTime(opts.exp ?? '5m')
    .sign(opts.key ?? jwks.privateKey);

const local = () =>
  createTokenVerifier([{ issuer: ISS, audience: 'meshhub', keys: { keys: [jwks.publicJwk] } }], {
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
      { issuer: 'https://idp.example', keys: new URL(jwks.url), rolesClaim: 'realm_access.roles' },
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
    const secret = new TextEncoder().encode(JSON.stringify(jwks.publicJwk));
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
      .sign(jwks.privateKey);
    expect(await reasonOf(local().verify(token))).toBe('not_yet_valid');
  });

  it('refuses a wrong issuer and a wrong audience', async () => {
    expect(await reasonOf(local().verify(await sign({}, { iss: 'https://evil.example' })))).toBe(
      'wrong_issuer',
    );
    expect(await reasonOf(local().verify(await sign({}, { aud: 'someone-else' })))).toBe('wrong_audience');
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
