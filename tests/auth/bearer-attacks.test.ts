/**
 * Bearer tokens at the messaging API over real HTTP: the JWT attacks of the issue (alg none,
 * algorithm confusion, expired, not yet valid, wrong issuer or audience, tampering, foreign
 * keys) are each a 401 with `WWW-Authenticate: Bearer … error="invalid_token"`; tokens of an
 * external identity provider (JWKS over loopback HTTP, roles from a nested claim) work and map
 * to their own principal `idp:<sub>`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { generateKeyPair, importJWK, type JWK, type JWTPayload, SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGNING_KEY_FILE } from '../../src/auth/local-issuer.js';
import { HubUserService } from '../../src/auth/user-service.js';
import { SubscriptionRepository } from '../../src/messaging/subscription-repository.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { call, FAST_MESSAGING, knownNodes, send, subscriber } from '../messaging/helpers.js';
import { type JwksServer, startJwksServer } from './helpers.js';

type Key = Awaited<ReturnType<typeof importJWK>>;
const IDP_ISSUER = 'https://idp.example.test/realms/field';
const IDP_AUDIENCE = 'meshhub-gateway';

let t: TestHub;
let idp: JwksServer;
let localKey: Key;
let localKid: string;
let localIssuer: string;
let alice: string;

beforeAll(async () => {
  idp = await startJwksServer('idp-1', '/certs');
  t = await startTestHub({
    ...FAST_MESSAGING,
    AUTH_JWKS_URL: idp.url,
    AUTH_ISSUER: IDP_ISSUER,
    AUTH_AUDIENCE: IDP_AUDIENCE,
    AUTH_ROLES_CLAIM: 'realm_access.roles',
  });
  // The test owns this hub's data directory: it may sign with the hub's own key to forge claims.
  const stored = JSON.parse(readFileSync(join(t.dataDir, SIGNING_KEY_FILE), 'utf8')) as { privateJwk: JWK };
  localKey = await importJWK({ ...stored.privateJwk, alg: 'EdDSA' }, 'EdDSA');
  localKid = t.hub.identity.localIssuer.keyId;
  localIssuer = t.hub.identity.localIssuer.issuer;
  alice = await subscriber(t, 'alice');
});
afterAll(async () => {
  await t?.stop();
  await idp?.close();
});

const now = () => Math.floor(Date.now() / 1000);

/** A token signed with the hub's key; it carries alice's token version, as the hub's own tokens do. */
async function localToken(
  claims: JWTPayload = {},
  header: Record<string, unknown> = {},
  key: Key = localKey,
) {
  const version = await new HubUserService(t.hub.store.db).tokenVersion('alice');
  return new SignJWT({ roles: ['subscriber'], token_version: version, ...claims })
    .setProtectedHeader({ alg: 'EdDSA', kid: localKid, ...header })
    .setIssuer((claims.iss as string) ?? localIssuer)
    .setSubject('alice')
    .setAudience((claims.aud as string) ?? 'meshhub')
    .setIssuedAt()
    .setExpirationTime((claims.exp as number) ?? now() + 300)
    .sign(key);
}

const conversations = (authorization?: string) =>
  call(
    t.baseUrl,
    'GET',
    '/api/v1/messages/conversations',
    authorization ? { headers: { authorization } } : {},
  );

async function expectInvalidToken(token: string, reason: RegExp) {
  const res = await conversations(`Bearer ${token}`);
  expect(res.status).toBe(401);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const challenge = res.headers.get('www-authenticate') ?? '';
  expect(challenge).toMatch(/^Bearer realm="meshhub", error="invalid_token", error_description="[^"]+"$/);
  expect(res.body.detail).toMatch(reason);
}

describe('bearer token attacks: 401 with WWW-Authenticate', () => {
  it('a forged token with our own key works (the baseline of every attack below)', async () => {
    expect((await conversations(`Bearer ${await localToken()}`)).status).toBe(200);
  });

  it('a token of another token version, without one, or of no such user: 401 revoked', async () => {
    const version = (await new HubUserService(t.hub.store.db).tokenVersion('alice'))!;
    await expectInvalidToken(await localToken({ token_version: version - 1 }), /revoked/);
    await expectInvalidToken(await localToken({ token_version: String(version) }), /revoked/);
    await expectInvalidToken(await localToken({ token_version: undefined }), /revoked/);
    const ghost = await new SignJWT({ roles: ['admin'] })
      .setProtectedHeader({ alg: 'EdDSA', kid: localKid })
      .setIssuer(localIssuer)
      .setSubject('nobody-at-all')
      .setAudience('meshhub')
      .setExpirationTime(now() + 300)
      .sign(localKey);
    await expectInvalidToken(ghost, /revoked/);
  });

  it('no token: 401 with a challenge but no error code (RFC 6750 §3.1)', async () => {
    const res = await conversations();
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="meshhub"');
    const basic = await conversations('Basic YWxpY2U6cGFzcw==');
    expect(basic.status).toBe(401);
    expect(basic.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
  });

  it('alg none', async () => {
    const token = new UnsecuredJWT({ roles: ['admin'] })
      .setIssuer(localIssuer)
      .setSubject('alice')
      .setAudience('meshhub')
      .setExpirationTime('5m')
      .encode();
    await expectInvalidToken(token, /algorithm that is not allowed/);
  });

  it('algorithm confusion: HS256 keyed with the public JWK from /.well-known/jwks.json', async () => {
    const jwks = await call(t.baseUrl, 'GET', '/.well-known/jwks.json');
    const publicJwk = jwks.body.keys[0];
    for (const secret of [JSON.stringify(publicJwk), publicJwk.x as string]) {
      const token = await new SignJWT({ roles: ['admin'] })
        .setProtectedHeader({ alg: 'HS256', kid: localKid })
        .setIssuer(localIssuer)
        .setSubject('alice')
        .setAudience('meshhub')
        .setExpirationTime('5m')
        .sign(new TextEncoder().encode(secret));
      await expectInvalidToken(token, /algorithm that is not allowed/);
    }
  });

  it('expired', async () => {
    await expectInvalidToken(await localToken({ exp: now() - 120 }), /expired/);
  });

  it('not yet valid', async () => {
    await expectInvalidToken(await localToken({ nbf: now() + 600, exp: now() + 1200 }), /not valid yet/);
  });

  it('wrong issuer, wrong audience', async () => {
    await expectInvalidToken(await localToken({ iss: 'urn:meshhub:someone-else' }), /untrusted issuer/);
    await expectInvalidToken(await localToken({ aud: 'another-app' }), /another audience/);
  });

  it('a tampered payload', async () => {
    const [h, , s] = (await localToken()).split('.');
    const forged = Buffer.from(
      JSON.stringify({ sub: 'bob', iss: localIssuer, aud: 'meshhub', roles: ['admin'], exp: now() + 600 }),
    ).toString('base64url');
    await expectInvalidToken(`${h}.${forged}.${s}`, /signature is invalid/);
  });

  it('signed by a foreign key, with our kid or another', async () => {
    const foreign = (await generateKeyPair('EdDSA', { crv: 'Ed25519' })).privateKey;
    await expectInvalidToken(await localToken({}, {}, foreign), /signature is invalid/);
    await expectInvalidToken(await localToken({}, { kid: 'not-ours' }, foreign), /unknown key/);
  });

  it('garbage', async () => {
    await expectInvalidToken('abc.def.ghi', /malformed/);
  });

  it('property: any Authorization header is 401 or 200 with a problem body on refusal, never a 5xx', async () => {
    const printable = fc.string({
      unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
    });
    const header = fc.oneof(
      printable,
      printable.map((s) => `Bearer ${s}`),
      fc.tuple(printable, printable, printable).map(([a, b, c]) => `Bearer ${a}.${b}.${c}`),
    );
    await fc.assert(
      fc.asyncProperty(header, async (value) => {
        const res = await conversations(value.trim() || 'x');
        expect(res.status).toBe(401);
        expect(res.body.status).toBe(401);
      }),
      { numRuns: 60 },
    );
  });
});

describe('an external identity provider', () => {
  const idpToken = (claims: JWTPayload, aud = IDP_AUDIENCE) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'idp-1' })
      .setIssuer(IDP_ISSUER)
      .setSubject('f3a1-77')
      .setAudience(aud)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(idp.privateKey);

  it('is trusted, with roles from AUTH_ROLES_CLAIM and its own principal idp:<sub>', async () => {
    const token = await idpToken({
      preferred_username: 'ranger-jo',
      realm_access: { roles: ['subscriber'] },
    });
    expect((await conversations(`Bearer ${token}`)).status).toBe(200);
    const [node] = await knownNodes(t, 1);
    expect((await send(t, token, node!, 'from the idp')).status).toBe(403);
    new SubscriptionRepository(t.hub.store.db).create({
      subscriber: 'idp:f3a1-77',
      nodes: 'all',
      source: 'test',
    });
    const sent = await send(t, token, node!, 'from the idp');
    expect(sent.status).toBe(202);
    // A local user named like the IdP user's display name sees nothing of it.
    const impostor = await subscriber(t, 'ranger-jo');
    const theirs = await call(t.baseUrl, 'GET', `/api/v1/messages/${sent.body.id}`, { token: impostor });
    expect(theirs.status).toBe(404);
    expect((await call(t.baseUrl, 'GET', `/api/v1/messages/${sent.body.id}`, { token })).status).toBe(200);
  });

  it('refuses its tokens for another audience, and without the role', async () => {
    await expectInvalidToken(
      await idpToken({ realm_access: { roles: ['subscriber'] } }, 'another-app'),
      /another audience/,
    );
    const roleless = await idpToken({ realm_access: { roles: ['viewer'] } });
    expect((await conversations(`Bearer ${roleless}`)).status).toBe(403);
  });

  it('keeps local users working next to it', async () => {
    expect((await conversations(`Bearer ${alice}`)).status).toBe(200);
  });
});
