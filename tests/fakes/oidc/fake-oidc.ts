/**
 * A loopback OpenID Connect provider for the browser tests, speaking the documented endpoints:
 * discovery (`/.well-known/openid-configuration`, OpenID Connect Discovery 1.0), the
 * authorization endpoint (authorization-code flow, OIDC Core 3.1, with PKCE S256, RFC 7636) with
 * a sign-in form, the token endpoint (RFC 6749 §4.1.3, public client: no secret, the verifier
 * checked), and the JWKS (ES256). Errors are the RFC 6749 §5.2 JSON (`invalid_grant`, …) or a
 * redirect with `error` (§4.1.2.1). Cross-origin calls get CORS headers, as a provider that
 * supports single-page apps sends them.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';

export interface FakeUser {
  name: string;
  roles: string[];
}

interface Grant {
  clientId: string;
  redirectUri: string;
  challenge: string;
  nonce: string | undefined;
  user: string;
}

export interface FakeOidc {
  issuer: string;
  jwksUrl: string;
  clientId: string;
  /** The API's audience (what the hub's AUTH_AUDIENCE is set to). */
  audience: string;
  users: Map<string, FakeUser>;
  /** `aud` of the access tokens it issues (default: `audience`); another value exercises the ID-token fallback. */
  accessAudience: string;
  /** Lifetime of the next tokens, seconds. */
  tokenLifetimeS: number;
  /** Every token request, for assertions. */
  tokenRequests: URLSearchParams[];
  /**
   * A token for `login` as the token endpoint would issue it, minted directly (for the test's own
   * API calls, or an already expired one: a negative `lifetimeS`).
   */
  mint(login: string, options?: { audience?: string; lifetimeS?: number }): Promise<string>;
  stop(): Promise<void>;
}

export async function startFakeOidc(
  options: { clientId?: string; audience?: string; redirectUris?: (issuerOrigin: string) => string[] } = {},
): Promise<FakeOidc & { allowRedirect(uri: string): void }> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: 'oidc-key', alg: 'ES256', use: 'sig' };
  const codes = new Map<string, Grant>();
  const redirects = new Set<string>();
  let origin = '';

  const fake: FakeOidc & { allowRedirect(uri: string): void } = {
    issuer: '',
    jwksUrl: '',
    clientId: options.clientId ?? 'meshhub-console',
    audience: options.audience ?? 'api://meshhub-audit',
    users: new Map(),
    accessAudience: options.audience ?? 'api://meshhub-audit',
    tokenLifetimeS: 600,
    tokenRequests: [],
    allowRedirect: (uri) => redirects.add(uri),
    mint: async (login, mintOptions = {}) => {
      const user = fake.users.get(login);
      if (!user) throw new Error(`fake OIDC: no user ${login}`);
      return sign(
        { ...claimsOf(login, user), scp: 'access' },
        mintOptions.audience ?? fake.accessAudience,
        mintOptions.lifetimeS,
      );
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  const cors = (res: ServerResponse) => {
    res.setHeader('access-control-allow-origin', '*');
    res.setHeader('access-control-allow-headers', 'content-type');
  };
  const json = (res: ServerResponse, status: number, body: unknown) => {
    cors(res);
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(JSON.stringify(body));
  };
  const readBody = (req: IncomingMessage) =>
    new Promise<URLSearchParams>((resolve) => {
      let text = '';
      req.on('data', (c: Buffer) => {
        text += c.toString('utf8');
      });
      req.on('end', () => resolve(new URLSearchParams(text)));
    });
  const claimsOf = (login: string, user: FakeUser) => ({
    sub: `sub-${login}`,
    preferred_username: login,
    name: user.name,
    roles: user.roles,
  });
  const sign = (claims: Record<string, unknown>, audience: string, lifetimeS = fake.tokenLifetimeS) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'oidc-key', typ: 'JWT' })
      .setIssuer(fake.issuer)
      .setAudience(audience)
      .setIssuedAt(Math.floor(Date.now() / 1000) + Math.min(0, lifetimeS) - 60)
      .setExpirationTime(Math.floor(Date.now() / 1000) + lifetimeS)
      .sign(privateKey);

  const html = (res: ServerResponse, body: string) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Fake IdP</title></head><body>${body}</body></html>`,
    );
  };
  const esc = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

  const server: Server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', origin);
      if (req.method === 'OPTIONS') {
        cors(res);
        res.writeHead(204);
        return res.end();
      }
      if (url.pathname === '/.well-known/openid-configuration') {
        return json(res, 200, {
          issuer: fake.issuer,
          authorization_endpoint: `${origin}/authorize`,
          token_endpoint: `${origin}/token`,
          jwks_uri: fake.jwksUrl,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['ES256'],
          code_challenge_methods_supported: ['S256'],
          token_endpoint_auth_methods_supported: ['none'],
          scopes_supported: ['openid', 'profile', 'email'],
        });
      }
      if (url.pathname === '/keys') return json(res, 200, { keys: [jwk] });
      if (url.pathname === '/authorize' && req.method === 'GET') {
        const q = url.searchParams;
        const redirectUri = q.get('redirect_uri') ?? '';
        if (q.get('client_id') !== fake.clientId || !redirects.has(redirectUri)) {
          res.writeHead(400, { 'content-type': 'text/plain' });
          return res.end('unknown client_id or redirect_uri not registered');
        }
        const back = new URL(redirectUri);
        const fail = (error: string, description: string) => {
          back.searchParams.set('error', error);
          back.searchParams.set('error_description', description);
          if (q.get('state')) back.searchParams.set('state', q.get('state')!);
          res.writeHead(302, { location: back.href });
          res.end();
        };
        if (q.get('response_type') !== 'code') return fail('unsupported_response_type', 'only code');
        if (q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge'))
          return fail('invalid_request', 'PKCE with S256 is required');
        if (!q.get('scope')?.split(' ').includes('openid'))
          return fail('invalid_scope', 'openid is required');
        const hidden = [...q.entries()]
          .map(([k, v]) => `<input type="hidden" name="${esc(k)}" value="${esc(v)}">`)
          .join('');
        return html(
          res,
          `<h1>Fake identity provider</h1><form method="post" action="/authorize">${hidden}
           <label>Account <input name="login" autocomplete="username"></label>
           <button type="submit">Continue</button></form>`,
        );
      }
      if (url.pathname === '/authorize' && req.method === 'POST') {
        const f = await readBody(req);
        const redirectUri = f.get('redirect_uri') ?? '';
        if (!redirects.has(redirectUri)) {
          res.writeHead(400);
          return res.end();
        }
        const back = new URL(redirectUri);
        const login = f.get('login') ?? '';
        if (!fake.users.has(login)) {
          back.searchParams.set('error', 'access_denied');
          back.searchParams.set('error_description', 'unknown account');
        } else {
          const code = randomBytes(16).toString('hex');
          codes.set(code, {
            clientId: f.get('client_id') ?? '',
            redirectUri,
            challenge: f.get('code_challenge') ?? '',
            nonce: f.get('nonce') ?? undefined,
            user: login,
          });
          back.searchParams.set('code', code);
        }
        if (f.get('state')) back.searchParams.set('state', f.get('state')!);
        res.writeHead(302, { location: back.href });
        return res.end();
      }
      if (url.pathname === '/token' && req.method === 'POST') {
        const f = await readBody(req);
        fake.tokenRequests.push(f);
        if (f.get('grant_type') !== 'authorization_code')
          return json(res, 400, { error: 'unsupported_grant_type' });
        if (f.has('client_secret'))
          return json(res, 400, { error: 'invalid_client', error_description: 'public client' });
        const code = f.get('code') ?? '';
        const grant = codes.get(code);
        codes.delete(code);
        if (!grant || grant.clientId !== f.get('client_id') || grant.redirectUri !== f.get('redirect_uri'))
          return json(res, 400, { error: 'invalid_grant', error_description: 'unknown or used code' });
        const verifier = f.get('code_verifier') ?? '';
        const challenge = createHash('sha256').update(verifier).digest('base64url');
        if (challenge !== grant.challenge)
          return json(res, 400, { error: 'invalid_grant', error_description: 'PKCE verification failed' });
        const user = fake.users.get(grant.user)!;
        const common = claimsOf(grant.user, user);
        const [access, id] = await Promise.all([
          sign({ ...common, scp: 'access' }, fake.accessAudience),
          sign({ ...common, ...(grant.nonce ? { nonce: grant.nonce } : {}) }, fake.clientId),
        ]);
        return json(res, 200, {
          token_type: 'Bearer',
          access_token: access,
          id_token: id,
          expires_in: fake.tokenLifetimeS,
          scope: 'openid profile email',
        });
      }
      res.writeHead(404);
      res.end();
    })();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  fake.issuer = origin;
  fake.jwksUrl = `${origin}/keys`;
  for (const uri of options.redirectUris?.(origin) ?? []) redirects.add(uri);
  return fake;
}
