/**
 * The hub's signing key and verifier: created once in DATA_DIR with mode 0600, reused across
 * restarts (and by the CLI), refused when unreadable; external identity provider settings are
 * checked together and reported by name.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { externalTrustedIssuer, openHubIdentity } from '../../src/auth/hub-identity.js';
import { AuthError } from '../../src/auth/jwt-verifier.js';
import { LocalIssuer, SIGNING_KEY_FILE } from '../../src/auth/local-issuer.js';
import { ConfigError } from '../../src/config/load.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'meshhub-issuer-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('LocalIssuer', () => {
  it('creates the key pair once (0600) and reuses it: tokens of one instance verify at the next', async () => {
    const first = await LocalIssuer.open(dir);
    const file = join(dir, SIGNING_KEY_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const second = await LocalIssuer.open(dir);
    expect(second.keyId).toBe(first.keyId);
    expect(second.issuer).toBe(`urn:meshhub:${first.keyId}`);
    const identity = await openHubIdentity({ dataDir: dir });
    const token = await first.issue({ username: 'alice', roles: ['subscriber'] }, 60);
    expect(token.expiresIn).toBe(60);
    const verified = await identity.verifier.verify(token.accessToken);
    expect(verified).toMatchObject({ subject: 'alice', username: 'alice', roles: ['subscriber'] });
    expect(identity.principalOf(verified)).toEqual({
      id: 'alice',
      name: 'alice',
      roles: ['subscriber'],
      local: true,
    });
  });

  it('tightens a key file others could read, and refuses one that holds no key', async () => {
    await LocalIssuer.open(dir);
    const file = join(dir, SIGNING_KEY_FILE);
    chmodSync(file, 0o644);
    const warnings: string[] = [];
    await LocalIssuer.open(dir, { warn: (m) => warnings.push(m) });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(warnings[0]).toMatch(/readable by other users/);
    expect(warnings[0]).not.toContain(JSON.parse(readFileSync(file, 'utf8')).privateJwk.d);
    writeFileSync(file, '{"privateJwk":{"kty":"RSA"}}', { mode: 0o600 });
    await expect(LocalIssuer.open(dir)).rejects.toThrow(/no Ed25519 private key/);
    writeFileSync(file, 'garbage', { mode: 0o600 });
    await expect(LocalIssuer.open(dir)).rejects.toThrow(/not valid JSON/);
  });

  it('a token of another hub (another key) is refused', async () => {
    const other = mkdtempSync(join(tmpdir(), 'meshhub-issuer-'));
    try {
      const foreign = await LocalIssuer.open(other);
      const identity = await openHubIdentity({ dataDir: dir });
      const token = await foreign.issue({ username: 'alice', roles: ['admin'] }, 60);
      const error = await identity.verifier.verify(token.accessToken).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AuthError);
      expect((error as AuthError).reason).toBe('wrong_issuer');
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});

describe('external identity provider settings', () => {
  const problems = (config: Parameters<typeof externalTrustedIssuer>[0]) => {
    try {
      externalTrustedIssuer(config);
      return [];
    } catch (error) {
      return error instanceof ConfigError ? error.problems : ['other'];
    }
  };

  it('none set: local issuer only; all three set: trusted', () => {
    expect(externalTrustedIssuer({})).toBeUndefined();
    expect(
      externalTrustedIssuer({
        jwksUrl: 'https://idp.example/certs',
        issuer: 'https://idp.example',
        audience: 'meshhub',
        rolesClaim: 'realm_access.roles',
      }),
    ).toMatchObject({ issuer: 'https://idp.example', audience: 'meshhub', rolesClaim: 'realm_access.roles' });
  });

  it('reports every missing or bad setting by name', () => {
    expect(problems({ jwksUrl: 'https://idp.example/certs' })).toEqual([
      'AUTH_ISSUER: required when AUTH_JWKS_URL is set',
      'AUTH_AUDIENCE: required when AUTH_JWKS_URL is set',
    ]);
    expect(problems({ issuer: 'x', audience: 'y' })).toEqual([
      'AUTH_JWKS_URL: required when AUTH_ISSUER or AUTH_AUDIENCE is set',
    ]);
    expect(problems({ jwksUrl: 'http://idp.example/certs', issuer: 'x', audience: 'y' })).toEqual([
      'AUTH_JWKS_URL: must be https (plain http only to localhost)',
    ]);
    expect(problems({ jwksUrl: 'not a url', issuer: 'x', audience: 'y' })[0]).toMatch(
      /AUTH_JWKS_URL: not a URL/,
    );
  });
});
