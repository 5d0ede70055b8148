/**
 * The site registry on a real PostgreSQL (issue 12 "Site identity"): what an operator may
 * register (and the exact error when not), re-adding, revocation seen by every process, keys from
 * a JWKS URL, request ids remembered once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, type JSONWebKeySet } from 'jose';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalIssuer } from '../../../src/auth/local-issuer.js';
import { SYNC_API } from '../../../sync/protocol.js';
import { signSiteRequest, verifySiteRequest } from '../../../sync/signing.js';
import { migrateUpstream } from '../../../sync/upstream/db/migrate.js';
import { openPool } from '../../../sync/upstream/db/pool.js';
import { SiteRegistry, SiteRegistryError } from '../../../sync/upstream/sites.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';

const skip = await skipWithoutPostgres();

describe.skipIf(skip)('SiteRegistry', () => {
  let schema: TestSchema;
  let pool: pg.Pool;
  let registry: SiteRegistry;
  let issuer: LocalIssuer;
  let dir: string;
  let clock = 1_000;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'meshhub-sites-'));
    issuer = await LocalIssuer.open(dir);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  beforeEach(async () => {
    schema = await createTestSchema('sites');
    pool = openPool(schema.url, { max: 3 });
    await migrateUpstream(pool);
    clock = 1_000;
    registry = new SiteRegistry(pool, { now: () => clock });
  });
  afterEach(async () => {
    await pool.end();
    await schema.drop();
  });

  const refusal = (promise: Promise<unknown>) =>
    promise.then(
      () => 'accepted',
      (e: unknown) => {
        expect(e).toBeInstanceOf(SiteRegistryError);
        return (e as Error).message;
      },
    );

  it('registers a site with a public key set and lists it', async () => {
    const row = await registry.add({ siteId: 'north-1', name: 'North', publicJwks: issuer.jwks() });
    expect(row).toEqual({
      siteId: 'north-1',
      name: 'North',
      revokedAt: null,
      createdAt: 1_000,
      ackedSeq: 0,
      lastContactAt: null,
      lastBatchAt: null,
      lastRecordAt: null,
      recordsApplied: 0,
      nodeCount: 0,
    });
    expect(await registry.list()).toEqual([row]);
    const keys = await registry.keysFor('north-1');
    expect(keys).toEqual({ siteId: 'north-1', revoked: false, keys: issuer.jwks() });
    expect(await registry.keysFor('nobody')).toBeUndefined();
  });

  it('refuses what it cannot store, saying what to fix', async () => {
    const pub = issuer.jwks().keys[0]!;
    expect(await refusal(registry.add({ siteId: 'North', publicJwks: issuer.jwks() }))).toBe(
      '"North" is not a site id: lower-case letters, digits and "-", at most 63, starting with a letter or digit',
    );
    expect(await refusal(registry.add({ siteId: 'a' }))).toBe(
      'give the site either a public key set or a JWKS URL (one of them)',
    );
    expect(
      await refusal(registry.add({ siteId: 'a', publicJwks: { keys: [{ ...pub, d: 'c2VjcmV0' }] } })),
    ).toBe("keys[0] holds private key material (d): register the site's PUBLIC key only");
    expect(
      await refusal(
        registry.add({ siteId: 'a', publicJwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'a', y: 'b' }] } }),
      ),
    ).toBe('the key set holds no Ed25519 public key (kty OKP, crv Ed25519)');
    expect(await refusal(registry.add({ siteId: 'a', publicJwks: { keys: [{ ...pub, x: 'AAAA' }] } }))).toBe(
      'keys[0] is not a valid Ed25519 public key',
    );
    expect(
      await refusal(registry.add({ siteId: 'a', publicJwks: { nope: 1 } as unknown as JSONWebKeySet })),
    ).toBe('the public key file must be a JWK set: {"keys": [...]}');
    expect(await refusal(registry.add({ siteId: 'a', jwksUrl: 'http://example.org/jwks.json' }))).toBe(
      'the JWKS URL must be https (http only on a loopback address), not http://example.org',
    );
    expect(await refusal(registry.add({ siteId: 'a', jwksUrl: 'ftp://127.0.0.1/jwks' }))).toBe(
      'the JWKS URL must be https (http only on a loopback address), not ftp://127.0.0.1',
    );
    expect(await refusal(registry.add({ siteId: 'a', jwksUrl: 'not a url' }))).toBe(
      '"not a url" is not a URL',
    );
    expect(await registry.list()).toEqual([]);
  });

  it('accepts an http JWKS URL on loopback only, https anywhere', async () => {
    for (const url of [
      'http://127.0.0.1:8080/jwks.json',
      'http://localhost/jwks',
      'http://[::1]:9/j',
      'https://site.example/j',
    ]) {
      await registry.add({ siteId: 'a', jwksUrl: url });
    }
    expect((await registry.list()).length).toBe(1);
  });

  it('re-adding a site replaces its keys, lifts a revocation and keeps its cursor', async () => {
    await registry.add({ siteId: 'a', name: 'A', publicJwks: issuer.jwks() });
    await pool.query(`UPDATE sites SET acked_seq = 42 WHERE site_id = 'a'`);
    clock = 2_000;
    expect(await registry.revoke('a')).toBe(true);
    clock = 3_000;
    expect(await registry.revoke('a')).toBe(true);
    expect((await registry.get('a'))?.revokedAt).toBe(2_000);
    expect((await registry.keysFor('a'))?.revoked).toBe(true);

    const row = await registry.add({ siteId: 'a', jwksUrl: 'https://a.example/jwks.json' });
    expect(row).toMatchObject({ siteId: 'a', name: 'A', revokedAt: null, ackedSeq: 42, createdAt: 1_000 });
    const keys = await registry.keysFor('a');
    expect(keys?.revoked).toBe(false);
    expect(typeof keys?.keys).toBe('function');
    expect(await registry.revoke('nobody')).toBe(false);
  });

  it('a revocation in one process is seen by another at once', async () => {
    await registry.add({ siteId: 'a', publicJwks: issuer.jwks() });
    const other = openPool(schema.url, { max: 1 });
    try {
      const elsewhere = new SiteRegistry(other);
      expect((await elsewhere.keysFor('a'))?.revoked).toBe(false);
      await registry.revoke('a');
      expect((await elsewhere.keysFor('a'))?.revoked).toBe(true);
    } finally {
      await other.end();
    }
  });

  it('verifies tokens with keys from a JWKS URL, one resolver per site and URL', async () => {
    const fetched: string[] = [];
    const remote = new SiteRegistry(pool, {
      fetchJwks: (url) => {
        fetched.push(url);
        return createLocalJWKSet(issuer.jwks());
      },
    });
    await remote.add({ siteId: 'a', jwksUrl: 'https://a.example/jwks.json' });
    const token = await signSiteRequest(issuer, {
      siteId: 'a',
      method: 'GET',
      path: `${SYNC_API}/ping`,
      nowMs: Date.now(),
    });
    for (let i = 0; i < 3; i++) {
      const verified = await verifySiteRequest(token, await remote.keysFor('a'), {
        method: 'GET',
        path: `${SYNC_API}/ping`,
      });
      expect(verified.siteId).toBe('a');
    }
    expect(fetched).toEqual(['https://a.example/jwks.json']);
    await remote.add({ siteId: 'a', jwksUrl: 'https://a.example/other.json' });
    await remote.keysFor('a');
    expect(fetched).toEqual(['https://a.example/jwks.json', 'https://a.example/other.json']);
  });

  it('counts each site’s nodes and records last contact', async () => {
    await registry.add({ siteId: 'a', publicJwks: issuer.jwks() });
    await pool.query(
      `INSERT INTO nodes (site_id, node_id, node_num, updated_at, received_at) VALUES
         ('a', '!00000001', 1, 0, 0), ('a', '!00000002', 2, 0, 0)`,
    );
    clock = 5_000;
    await registry.touch('a');
    expect(await registry.get('a')).toMatchObject({ nodeCount: 2, lastContactAt: 5_000 });
  });

  it('remembers a request id once, and forgets ids long expired', async () => {
    await registry.add({ siteId: 'a', publicJwks: issuer.jwks() });
    expect(await registry.rememberRequest('a', 'j1', 10_000)).toBe(true);
    expect(await registry.rememberRequest('a', 'j1', 10_000)).toBe(false);
    clock = 10_000 + 10 * 60_000;
    expect(await registry.rememberRequest('a', 'j2', clock + 120_000)).toBe(true);
    const left = await pool.query<{ jti: string }>('SELECT jti FROM sync_request_ids ORDER BY jti');
    expect(left.rows.map((r) => r.jti)).toEqual(['j2']);
  });
});
