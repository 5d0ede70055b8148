/**
 * The registered sites (docs/sync.md "Site identity"): who may sign sync requests, with which
 * public keys, and where each site's sync stands (cursor, last contact, lag, counts).
 *
 * A site registers either a public JWK set (`meshhub upstream site add <id> --public-key
 * <file>`) or a JWKS URL (`--jwks-url`). A key set is checked here, before it is stored: at
 * least one Ed25519 public key, and no private part of any key (an operator who pastes the
 * site's key file by mistake must not end up with the private key in the upstream's database).
 * A JWKS URL must be https, or http on a loopback address. Revocation is read from the database
 * on every request, so every upstream process honours it at once; only the remote JWKS fetcher
 * is cached (per site and URL), as jose's fetcher caches and rate-limits its fetches itself.
 */

import { importJWK, type JSONWebKeySet, type JWK, type JWTVerifyGetKey } from 'jose';
import type pg from 'pg';
import { remoteJwks } from '../../src/auth/jwt-verifier.js';
import { siteIdSchema } from '../protocol.js';
import type { RegisteredSiteKeys } from '../signing.js';

export interface SiteRow {
  siteId: string;
  name: string | null;
  revokedAt: number | null;
  createdAt: number;
  /** The last sequence number applied: the site's cursor as the upstream knows it. */
  ackedSeq: number;
  /** Any signed request (ping, batch, downlink), upstream clock. */
  lastContactAt: number | null;
  /** The last batch applied, upstream clock. */
  lastBatchAt: number | null;
  /** The newest applied record's own time (the site's clock): `now - lastRecordAt` is the lag. */
  lastRecordAt: number | null;
  recordsApplied: number;
  nodeCount: number;
}

export interface AddSiteInput {
  siteId: string;
  name?: string;
  publicJwks?: JSONWebKeySet;
  jwksUrl?: string;
}

/** An operator's registration that cannot be stored: the message says what to fix. */
export class SiteRegistryError extends Error {
  override readonly name = 'SiteRegistryError';
}

/** JWK members that only a private (or symmetric) key has. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const;

export interface SiteRegistryOptions {
  now?: () => number;
  /** How a JWKS URL becomes a key resolver (tests); default jose's createRemoteJWKSet. */
  fetchJwks?: (url: string) => JWTVerifyGetKey;
  /** AUTH_JWKS_ALLOW_PRIVATE_NETWORK: a site's JWKS URL may resolve to a LAN address (loopback always may). */
  allowPrivateNetwork?: boolean;
}

interface SiteDbRow {
  site_id: string;
  name: string | null;
  revoked_at: number | null;
  created_at: number;
  acked_seq: number;
  last_contact_at: number | null;
  last_batch_at: number | null;
  last_record_at: number | null;
  records_applied: number;
  node_count: number;
}

const SELECT_SITES = `
  SELECT s.site_id, s.name, s.revoked_at, s.created_at, s.acked_seq, s.last_contact_at, s.last_batch_at,
         s.last_record_at, s.records_applied,
         (SELECT count(*) FROM nodes n WHERE n.site_id = s.site_id) AS node_count
  FROM sites s`;

function toSiteRow(row: SiteDbRow): SiteRow {
  return {
    siteId: row.site_id,
    name: row.name,
    revokedAt: row.revoked_at,
    createdAt: row.created_at,
    ackedSeq: row.acked_seq,
    lastContactAt: row.last_contact_at,
    lastBatchAt: row.last_batch_at,
    lastRecordAt: row.last_record_at,
    recordsApplied: row.records_applied,
    nodeCount: row.node_count,
  };
}

function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** Checks a JWKS URL; returns it normalised. */
export function checkJwksUrl(input: string): string {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new SiteRegistryError(`"${input}" is not a URL`);
  }
  if (url.protocol === 'https:') return url.toString();
  if (url.protocol === 'http:' && isLoopbackHost(url.hostname)) return url.toString();
  throw new SiteRegistryError(
    `the JWKS URL must be https (http only on a loopback address), not ${url.protocol}//${url.host}`,
  );
}

/** Checks a public key set: at least one usable Ed25519 public key, no private part anywhere. */
export async function checkPublicJwks(input: unknown): Promise<JSONWebKeySet> {
  const keys = (input as { keys?: unknown } | null)?.keys;
  if (typeof input !== 'object' || input === null || !Array.isArray(keys)) {
    throw new SiteRegistryError('the public key file must be a JWK set: {"keys": [...]}');
  }
  let ed25519 = 0;
  for (const [i, key] of keys.entries()) {
    if (typeof key !== 'object' || key === null) throw new SiteRegistryError(`keys[${i}] is not a JWK`);
    const jwk = key as JWK;
    const secret = PRIVATE_MEMBERS.filter((m) => m in jwk);
    if (secret.length > 0) {
      throw new SiteRegistryError(
        `keys[${i}] holds private key material (${secret.join(', ')}): register the site's PUBLIC key only`,
      );
    }
    if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') {
      try {
        await importJWK({ ...jwk, alg: 'EdDSA' }, 'EdDSA');
      } catch {
        throw new SiteRegistryError(`keys[${i}] is not a valid Ed25519 public key`);
      }
      ed25519++;
    }
  }
  if (ed25519 === 0)
    throw new SiteRegistryError('the key set holds no Ed25519 public key (kty OKP, crv Ed25519)');
  return { keys: keys as JWK[] };
}

export class SiteRegistry {
  private readonly now: () => number;
  private readonly fetchJwks: (url: string) => JWTVerifyGetKey;
  /** Remote key resolvers per site, for the URL they were made for. */
  private readonly remote = new Map<string, { url: string; getKey: JWTVerifyGetKey }>();

  constructor(
    private readonly pool: pg.Pool,
    options: SiteRegistryOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.fetchJwks =
      options.fetchJwks ?? ((url) => remoteJwks(new URL(url), options.allowPrivateNetwork ?? false));
  }

  /**
   * Registers a site, or replaces an existing site's keys (and lifts its revocation); its sync
   * cursor and counts stay. Throws SiteRegistryError for an id, key set or URL that will not do.
   */
  async add(input: AddSiteInput): Promise<SiteRow> {
    const id = siteIdSchema.safeParse(input.siteId);
    if (!id.success) {
      throw new SiteRegistryError(`"${input.siteId}" is not a site id: ${id.error.issues[0]?.message ?? ''}`);
    }
    if ((input.publicJwks === undefined) === (input.jwksUrl === undefined)) {
      throw new SiteRegistryError('give the site either a public key set or a JWKS URL (one of them)');
    }
    const jwks = input.publicJwks === undefined ? null : await checkPublicJwks(input.publicJwks);
    const url = input.jwksUrl === undefined ? null : checkJwksUrl(input.jwksUrl);
    await this.pool.query(
      `INSERT INTO sites (site_id, name, public_jwks, jwks_url, created_at)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (site_id) DO UPDATE SET
         name = COALESCE(EXCLUDED.name, sites.name),
         public_jwks = EXCLUDED.public_jwks,
         jwks_url = EXCLUDED.jwks_url,
         revoked_at = NULL`,
      [id.data, input.name ?? null, jwks === null ? null : JSON.stringify(jwks), url, this.now()],
    );
    this.remote.delete(id.data);
    const row = await this.get(id.data);
    if (!row) throw new Error(`site ${id.data} vanished right after it was stored`);
    return row;
  }

  async list(): Promise<SiteRow[]> {
    const { rows } = await this.pool.query<SiteDbRow>(`${SELECT_SITES} ORDER BY s.site_id`);
    return rows.map(toSiteRow);
  }

  async get(siteId: string): Promise<SiteRow | undefined> {
    const { rows } = await this.pool.query<SiteDbRow>(`${SELECT_SITES} WHERE s.site_id = $1`, [siteId]);
    return rows[0] ? toSiteRow(rows[0]) : undefined;
  }

  /** Revokes a site (its requests are refused from now on, in every process); false when there is no such site. */
  async revoke(siteId: string): Promise<boolean> {
    const result = await this.pool.query(
      'UPDATE sites SET revoked_at = COALESCE(revoked_at, $2) WHERE site_id = $1',
      [siteId, this.now()],
    );
    this.remote.delete(siteId);
    return (result.rowCount ?? 0) > 0;
  }

  /** What verifySiteRequest needs to check a token of `siteId`; undefined for an unknown site. */
  async keysFor(siteId: string): Promise<RegisteredSiteKeys | undefined> {
    const { rows } = await this.pool.query<{
      public_jwks: JSONWebKeySet | null;
      jwks_url: string | null;
      revoked_at: number | null;
    }>('SELECT public_jwks, jwks_url, revoked_at FROM sites WHERE site_id = $1', [siteId]);
    const row = rows[0];
    if (!row) return undefined;
    const revoked = row.revoked_at !== null;
    if (row.public_jwks) return { siteId, revoked, keys: row.public_jwks };
    const url = row.jwks_url ?? '';
    let cached = this.remote.get(siteId);
    if (!cached || cached.url !== url) {
      cached = { url, getKey: this.fetchJwks(url) };
      this.remote.set(siteId, cached);
    }
    return { siteId, revoked, keys: cached.getKey };
  }

  /** Records a signed request from the site (last contact, upstream clock). */
  async touch(siteId: string): Promise<void> {
    await this.pool.query('UPDATE sites SET last_contact_at = $2 WHERE site_id = $1', [siteId, this.now()]);
  }

  /**
   * The site closed its downlink saying it is stopping (a clean stop): it is offline from now,
   * not once its last contact is two minutes old. Its next signed request makes it online again.
   */
  async markStopped(siteId: string): Promise<void> {
    await this.pool.query('UPDATE sites SET stopped_at = $2 WHERE site_id = $1', [siteId, this.now()]);
  }

  /**
   * Remembers a signed request's `jti` until the token expires; false when it was seen before (a
   * replay). Expired ids of the site are forgotten on the way.
   */
  async rememberRequest(siteId: string, jti: string, expiresAt: number): Promise<boolean> {
    return rememberRequestId(this.pool, siteId, jti, expiresAt, this.now());
  }
}

/** How long past its `exp` a request id is kept: the verifier's clock tolerance, and some. */
const REQUEST_ID_GRACE_MS = 5 * 60_000;

/**
 * Inserts a request id (in the caller's transaction when given a client); false when it is
 * there already. Deletes the site's ids that expired long enough ago to never verify again.
 */
export async function rememberRequestId(
  db: pg.Pool | pg.PoolClient,
  siteId: string,
  jti: string,
  expiresAt: number,
  nowMs: number,
): Promise<boolean> {
  await db.query('DELETE FROM sync_request_ids WHERE site_id = $1 AND expires_at < $2', [
    siteId,
    nowMs - REQUEST_ID_GRACE_MS,
  ]);
  const result = await db.query(
    `INSERT INTO sync_request_ids (site_id, jti, expires_at) VALUES ($1, $2, $3)
     ON CONFLICT (site_id, jti) DO NOTHING`,
    [siteId, jti.replaceAll('\u0000', '\uFFFD'), expiresAt],
  );
  return result.rowCount === 1;
}
