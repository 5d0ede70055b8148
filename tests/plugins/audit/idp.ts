/**
 * A local ES256 identity provider for the audit plugin's tests: its JWKS on loopback, tokens on
 * demand, and the settings and request headers that use them.
 */
import { createServer, type Server } from 'node:http';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';

/** A local identity provider: ES256 keys, JWKS on a loopback port, tokens on demand. */
export interface LocalIdp {
  issuer: string;
  jwksUrl: string;
  audience: string;
  token(
    claims?: Record<string, unknown>,
    options?: { audience?: string; expiresIn?: string; issuer?: string },
  ): Promise<string>;
  stop(): Promise<void>;
}

export async function startLocalIdp(): Promise<LocalIdp> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: 'test-key', alg: 'ES256', use: 'sig' };
  const server: Server = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const issuer = `http://127.0.0.1:${port}/tenant/v2.0`;
  return {
    issuer,
    jwksUrl: `http://127.0.0.1:${port}/discovery/v2.0/keys`,
    audience: 'api://meshhub-audit',
    token: (claims = {}, options = {}) =>
      new SignJWT({ preferred_username: 'alice@contoso.com', roles: [], ...claims })
        .setProtectedHeader({ alg: 'ES256', kid: 'test-key' })
        .setIssuer(options.issuer ?? issuer)
        .setSubject(String(claims.sub ?? 'user-alice'))
        .setAudience(options.audience ?? 'api://meshhub-audit')
        .setIssuedAt()
        .setExpirationTime(options.expiresIn ?? '10m')
        .sign(privateKey),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The settings that make the audit API verify bearer tokens from `idp`. */
export const idpAuthEnv = (idp: LocalIdp): Record<string, string> => ({
  AUTH_ENABLED: 'true',
  AUTH_JWKS_URL: idp.jwksUrl,
  AUTH_ISSUER: idp.issuer,
  AUTH_AUDIENCE: idp.audience,
});

/** `init` with `token` as its bearer token (other headers kept). */
export const withBearer = (token: string, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${token}` },
});

/** The authorization header for a token `idp` signs with `claims`. */
export async function bearerHeaders(
  idp: LocalIdp,
  claims?: Record<string, unknown>,
): Promise<Record<string, string>> {
  return { authorization: `Bearer ${await idp.token(claims)}` };
}

/** The claims of the tenant's administrator, root@contoso.com. */
export const ROOT_ADMIN = { roles: ['admin'], sub: 'root-1', preferred_username: 'root@contoso.com' };
