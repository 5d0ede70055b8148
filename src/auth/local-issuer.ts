/**
 * The hub's own token issuer (docs/architecture.md "Decisions": Auth). An Ed25519 key pair is created in
 * DATA_DIR on first start (file mode 0600, never logged); its public half is served at
 * `/.well-known/jwks.json`. Tokens carry `sub` (the username), `iss`, `aud`, `iat`, `exp`,
 * `preferred_username`, `roles` and `token_version` (the user's, when issued: a token of another
 * version is refused, src/auth/hub-identity.ts).
 *
 * The issuer string is `urn:meshhub:<key thumbprint>`: unique per hub, so an upstream that trusts
 * several hubs can tell their tokens apart. Deleting the key file rotates the key (every token
 * issued so far stops working).
 */
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JSONWebKeySet,
  type JWK,
  type JWTPayload,
  SignJWT,
} from 'jose';
import type { TrustedIssuer } from './jwt-verifier.js';

export const SIGNING_KEY_FILE = 'jwt-signing-key.json';
export const LOCAL_AUDIENCE = 'meshhub';
/** The claim carrying the user's token version (README "Logins and tokens"). */
export const TOKEN_VERSION_CLAIM = 'token_version';
const ALGORITHM = 'EdDSA';

type SigningKey = Awaited<ReturnType<typeof importJWK>>;

export interface IssuedToken {
  accessToken: string;
  /** Seconds. */
  expiresIn: number;
  /** Milliseconds since the epoch. */
  expiresAt: number;
}

export interface TokenSubject {
  /** The local username; becomes `sub` and `preferred_username`. */
  username: string;
  roles: readonly string[];
  /**
   * The user's token version (user-service.ts): bumping it ends the token. Left out, the token counts
   * as version 0, which no user made since versions exist has (they start at a random one).
   */
  tokenVersion?: number;
}

interface StoredKey {
  privateJwk: JWK;
}

function isPrivateEd25519(jwk: unknown): jwk is JWK {
  const k = jwk as JWK | undefined;
  return !!k && k.kty === 'OKP' && k.crv === 'Ed25519' && typeof k.d === 'string' && typeof k.x === 'string';
}

/** Reads the key file, or creates it (0600) when there is none. Two processes racing both end up with the same key. */
async function loadOrCreate(file: string, warn: (message: string) => void): Promise<JWK> {
  const existing = readKeyFile(file, warn);
  if (existing) return existing;
  const pair = await generateKeyPair(ALGORITHM, { crv: 'Ed25519', extractable: true });
  const privateJwk = await exportJWK(pair.privateKey);
  const stored: StoredKey = { privateJwk };
  try {
    // wx: never overwrite a key another process (the CLI, a second hub start) just wrote.
    writeFileSync(file, `${JSON.stringify(stored)}\n`, { mode: 0o600, flag: 'wx' });
    return privateJwk;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const raced = readKeyFile(file, warn);
    if (!raced) throw new Error(`${file} appeared but holds no usable key`);
    return raced;
  }
}

function readKeyFile(file: string, warn: (message: string) => void): JWK | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const mode = statSync(file).mode & 0o777;
  if (mode & 0o077) {
    warn(`${file} was readable by other users (mode ${mode.toString(8)}); setting it to 0600`);
    chmodSync(file, 0o600);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${file} is not valid JSON; delete it to create a new signing key`);
  }
  const jwk = (parsed as StoredKey | undefined)?.privateJwk;
  if (!isPrivateEd25519(jwk)) {
    throw new Error(`${file} holds no Ed25519 private key; delete it to create a new signing key`);
  }
  return jwk;
}

export class LocalIssuer {
  private constructor(
    readonly issuer: string,
    readonly keyId: string,
    private readonly publicJwk: JWK,
    private readonly signingKey: SigningKey,
  ) {}

  /** Loads the hub's signing key from `dataDir`, creating it on first start. */
  static async open(
    dataDir: string,
    options: { warn?: (message: string) => void } = {},
  ): Promise<LocalIssuer> {
    await mkdir(dataDir, { recursive: true });
    const privateJwk = await loadOrCreate(join(dataDir, SIGNING_KEY_FILE), options.warn ?? (() => {}));
    const { d: _private, ...publicPart } = privateJwk;
    const keyId = await calculateJwkThumbprint(publicPart);
    const publicJwk: JWK = {
      kty: publicPart.kty,
      crv: publicPart.crv,
      x: publicPart.x,
      kid: keyId,
      alg: ALGORITHM,
      use: 'sig',
    };
    const signingKey = await importJWK({ ...privateJwk, alg: ALGORITHM }, ALGORITHM);
    return new LocalIssuer(`urn:meshhub:${keyId}`, keyId, publicJwk, signingKey);
  }

  /** The public key set served at /.well-known/jwks.json. */
  jwks(): JSONWebKeySet {
    return { keys: [{ ...this.publicJwk }] };
  }

  /** How a TokenVerifier trusts this issuer. */
  trustedIssuer(): TrustedIssuer {
    return { issuer: this.issuer, audience: LOCAL_AUDIENCE, keys: this.jwks(), rolesClaim: 'roles' };
  }

  /**
   * Signs any claims with the hub's key (header `kid`, EdDSA): the sync client's request tokens
   * (sync/signing.ts). The caller sets iss/sub/aud/iat/exp/jti in `claims`.
   */
  async signClaims(claims: JWTPayload): Promise<string> {
    return new SignJWT(claims)
      .setProtectedHeader({ alg: ALGORITHM, kid: this.keyId, typ: 'JWT' })
      .sign(this.signingKey);
  }

  async issue(subject: TokenSubject, ttlSeconds: number, nowMs = Date.now()): Promise<IssuedToken> {
    const iat = Math.floor(nowMs / 1000);
    const exp = iat + Math.max(1, Math.floor(ttlSeconds));
    const accessToken = await new SignJWT({
      preferred_username: subject.username,
      roles: [...subject.roles],
      ...(subject.tokenVersion !== undefined ? { [TOKEN_VERSION_CLAIM]: subject.tokenVersion } : {}),
    })
      .setProtectedHeader({ alg: ALGORITHM, kid: this.keyId, typ: 'JWT' })
      .setIssuer(this.issuer)
      .setSubject(subject.username)
      .setAudience(LOCAL_AUDIENCE)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(this.signingKey);
    return { accessToken, expiresIn: exp - iat, expiresAt: exp * 1000 };
  }
}
