/**
 * Signing in to the audit console (spec "Authentication"; issue 15 "Sign-in"): with AUTH_ENABLED,
 * the OpenID Connect authorization-code flow with PKCE (RFC 7636, S256) against the identity
 * provider that `/api/config/auth` names: discovery at `{issuer}/.well-known/openid-configuration`,
 * the browser sent to its `authorization_endpoint`, back at `/audit/callback`, the code exchanged
 * at its `token_endpoint` by a public client (no secret in the browser).
 *
 * Which token calls the API (spec "Authentication" 2): the access token when its `aud` is the
 * API's audience, else the ID token. Tokens live in sessionStorage (this tab only) and never in
 * localStorage. An expired or refused token sends the user to sign in again and back to the same
 * URL (the search with its filters).
 */

import { t } from '../i18n/index.js';
import { jwtClaims } from '../lib/jwt.js';
import { createStore } from '../lib/store.js';
import type { AuthConfig } from './audit-types.js';

export interface AuditSession {
  token: string;
  /** Which token the provider's answer gave us for the API. */
  kind: 'access' | 'id';
  name: string;
  roles: string[];
  expiresAt: number;
}

export interface AuditAuthState {
  config?: AuthConfig;
  /** `/api/config/auth` could not be read. */
  configError?: unknown;
  session?: AuditSession;
  /** Why the user is (still) signed out, for the sign-in panel. */
  notice?: string;
}

const SESSION_KEY = 'meshhub.audit.session';
const PENDING_KEY = 'meshhub.audit.sign-in';
/** Renew this long before `exp`, so a request never leaves with a token about to lapse. */
const EXPIRY_MARGIN_MS = 5_000;

export const auditAuthStore = createStore<AuditAuthState>({ session: restore() });

/** A redirect to the identity provider is under way: whoever called should just stop. */
export class SignInRedirect extends Error {
  override readonly name = 'SignInRedirect';
}

/** A sign-in that failed, in words for the person (shown on the sign-in panel). */
export class SignInError extends Error {
  override readonly name = 'SignInError';
}

function restore(): AuditSession | undefined {
  try {
    const raw = sessionStorage.getItem(SESSION_KEY);
    if (!raw) return undefined;
    const s = JSON.parse(raw) as Partial<AuditSession>;
    if (typeof s.token !== 'string' || typeof s.expiresAt !== 'number' || typeof s.name !== 'string')
      return undefined;
    return {
      token: s.token,
      kind: s.kind === 'id' ? 'id' : 'access',
      name: s.name,
      roles: s.roles ?? [],
      expiresAt: s.expiresAt,
    };
  } catch {
    return undefined;
  }
}

function store(session: AuditSession | undefined): void {
  try {
    if (session) sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
    else sessionStorage.removeItem(SESSION_KEY);
  } catch {
    // Storage refused (private mode): the session lives in memory, for this page.
  }
}

let configPromise: Promise<AuthConfig | undefined> | undefined;

/** `/api/config/auth`, read once per page load (it is exempt from rate limits and tokens). */
export function loadAuthConfig(): Promise<AuthConfig | undefined> {
  configPromise ??= fetch('/api/config/auth', { headers: { accept: 'application/json' }, cache: 'no-store' })
    .then(async (res) => {
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const config = (await res.json()) as AuthConfig;
      auditAuthStore.set((s) => ({ ...s, config }));
      return config;
    })
    .catch((error: unknown) => {
      configPromise = undefined;
      auditAuthStore.set((s) => ({ ...s, configError: error }));
      return undefined;
    });
  return configPromise;
}

export function signOutOfAudit(notice?: string): void {
  store(undefined);
  auditAuthStore.set((s) => {
    const { session: _s, notice: _n, ...rest } = s;
    return notice ? { ...rest, notice } : rest;
  });
}

/**
 * The bearer token for an audit API call: undefined when auth is off (or the user has not signed
 * in: the API's 401 then says so). An expired token starts a new sign-in and throws SignInRedirect.
 */
export function auditToken(): string | undefined {
  // Once the page is on its way to the identity provider, nothing else goes out (it would go
  // without a token, and its 401 would be one more error on the way).
  if (redirecting) throw new SignInRedirect('signing in');
  const { session, config } = auditAuthStore.get();
  if (config?.status !== 'on' || !session) return undefined;
  if (Date.now() >= session.expiresAt - EXPIRY_MARGIN_MS) {
    expired();
    throw new SignInRedirect('the session expired');
  }
  return session.token;
}

/** The API refused our token (it expired early, keys rotated…): sign in again, then come back. */
export function expired(): void {
  if (redirecting) return;
  signOutOfAudit(t('audit.session.expired'));
  void beginSignIn().catch(() => {});
}

// --- the authorization-code flow ---------------------------------------------------------

interface Discovery {
  authorization_endpoint: string;
  token_endpoint: string;
}

interface Pending {
  state: string;
  nonce: string;
  verifier: string;
  tokenEndpoint: string;
  redirectUri: string;
  returnTo: string;
}

const redirectUri = () => `${location.origin}/audit/callback`;

function base64url(bytes: Uint8Array): string {
  let text = '';
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

const randomText = (bytes = 32) => base64url(crypto.getRandomValues(new Uint8Array(bytes)));

async function discover(issuer: string): Promise<Discovery> {
  const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  let doc: Partial<Discovery>;
  try {
    const res = await fetch(url, { headers: { accept: 'application/json' } });
    if (!res.ok) throw new Error(String(res.status));
    doc = (await res.json()) as Partial<Discovery>;
  } catch {
    throw new SignInError(t('audit.session.unreachableStart', { host: new URL(url).host }));
  }
  if (typeof doc.authorization_endpoint !== 'string' || typeof doc.token_endpoint !== 'string')
    throw new SignInError(t('audit.session.noEndpoints'));
  return doc as Discovery;
}

/**
 * The sign-in redirect under way. Several calls find the token expired at once (the search, the
 * filter options, the features): the first one starts the trip, the others join it — a second
 * trip would overwrite the first one's PKCE verifier and state, and the provider's answer to the
 * first would then be refused as stale.
 */
let redirecting: Promise<never> | undefined;

// Back from the provider's page without signing in: the page may come back from the
// back-forward cache with the redirect still marked as under way.
addEventListener('pageshow', (e) => {
  if (e.persisted) redirecting = undefined;
});

/** Sends the browser to the identity provider; it comes back to /audit/callback, then to `returnTo`. */
export function beginSignIn(returnTo = location.pathname + location.search): Promise<never> {
  redirecting ??= redirectToProvider(returnTo).catch((error: unknown) => {
    if (!(error instanceof SignInRedirect)) redirecting = undefined;
    throw error;
  });
  return redirecting;
}

async function redirectToProvider(returnTo: string): Promise<never> {
  const config = auditAuthStore.get().config ?? (await loadAuthConfig());
  if (!config?.issuer || !config.client_id) throw new SignInError(t('audit.session.notSetUp'));
  const discovery = await discover(config.issuer);
  const pending: Pending = {
    state: randomText(),
    nonce: randomText(),
    verifier: randomText(48),
    tokenEndpoint: discovery.token_endpoint,
    redirectUri: redirectUri(),
    returnTo: returnTo.startsWith('/audit') && !returnTo.startsWith('/audit/callback') ? returnTo : '/audit',
  };
  sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
  const scope = ['openid', 'profile', 'email'];
  // Entra ID names an API's permissions `api://<id>/<scope>`; `.default` asks for those granted.
  if (config.audience?.startsWith('api://')) scope.push(`${config.audience}/.default`);
  const url = new URL(discovery.authorization_endpoint);
  const params = {
    response_type: 'code',
    client_id: config.client_id,
    redirect_uri: pending.redirectUri,
    scope: scope.join(' '),
    state: pending.state,
    nonce: pending.nonce,
    code_challenge: base64url(await sha256(pending.verifier)),
    code_challenge_method: 'S256',
    ...(config.audience && !config.audience.startsWith('api://') ? { audience: config.audience } : {}),
  };
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  location.assign(url.href);
  throw new SignInRedirect('going to the identity provider');
}

/** Finishes the sign-in at /audit/callback; answers where to go next. */
export async function completeSignIn(search: string): Promise<string> {
  const params = new URLSearchParams(search);
  let pending: Pending | undefined;
  try {
    const raw = sessionStorage.getItem(PENDING_KEY);
    pending = raw ? (JSON.parse(raw) as Pending) : undefined;
  } catch {
    pending = undefined;
  }
  sessionStorage.removeItem(PENDING_KEY);
  const providerError = params.get('error');
  if (providerError) {
    const description = params.get('error_description');
    throw new SignInError(
      t('audit.session.refused', { reason: `${providerError}${description ? `: ${description}` : ''}` }),
    );
  }
  if (!pending || params.get('state') !== pending.state) throw new SignInError(t('audit.session.stale'));
  const code = params.get('code');
  if (!code) throw new SignInError(t('audit.session.noCode'));
  const config = auditAuthStore.get().config ?? (await loadAuthConfig());
  if (!config?.client_id) throw new SignInError(t('audit.session.noClientId'));
  let body: { access_token?: string; id_token?: string; error?: string; error_description?: string };
  try {
    const res = await fetch(pending.tokenEndpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: pending.redirectUri,
        client_id: config.client_id,
        code_verifier: pending.verifier,
      }),
    });
    body = (await res.json()) as typeof body;
    if (!res.ok)
      throw new SignInError(
        t('audit.session.noToken', {
          reason: `${body.error ?? res.status}${body.error_description ? `: ${body.error_description}` : ''}`,
        }),
      );
  } catch (error) {
    if (error instanceof SignInError) throw error;
    throw new SignInError(t('audit.session.unreachableFinish'));
  }
  adopt(chooseToken(body, config, pending.nonce));
  return pending.returnTo;
}

function adopt(session: AuditSession): void {
  store(session);
  auditAuthStore.set((s) => {
    const { notice: _n, ...rest } = s;
    return { ...rest, session };
  });
}

const audienceMatches = (aud: unknown, audience: string | null) =>
  !!audience && (aud === audience || (Array.isArray(aud) && aud.includes(audience)));

/** The access token if it is meant for the API, else the ID token (spec "Authentication" 2). */
export function chooseToken(
  tokens: { access_token?: string; id_token?: string },
  config: AuthConfig,
  nonce: string,
): AuditSession {
  const access = tokens.access_token ? jwtClaims(tokens.access_token) : undefined;
  const id = tokens.id_token ? jwtClaims(tokens.id_token) : undefined;
  if (id && id.nonce !== nonce) throw new SignInError(t('audit.session.nonce'));
  const pick =
    access && tokens.access_token && audienceMatches(access.aud, config.audience)
      ? { token: tokens.access_token, kind: 'access' as const, claims: access }
      : id && tokens.id_token
        ? { token: tokens.id_token, kind: 'id' as const, claims: id }
        : undefined;
  if (!pick) throw new SignInError(t('audit.session.noUsableToken'));
  const named = [
    id?.name,
    pick.claims.preferred_username,
    id?.preferred_username,
    pick.claims.email,
    pick.claims.sub,
  ].find((v): v is string => typeof v === 'string' && v !== '');
  const exp = pick.claims.exp;
  return {
    token: pick.token,
    kind: pick.kind,
    name: named ?? 'signed in',
    roles: rolesFrom(pick.claims, config.roles_claim),
    expiresAt: typeof exp === 'number' ? exp * 1000 : Date.now() + 3_600_000,
  };
}

function rolesFrom(claims: Record<string, unknown>, path: string): string[] {
  let value: unknown = claims;
  for (const key of path.split('.'))
    value = value && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
  return Array.isArray(value) ? value.filter((r): r is string => typeof r === 'string') : [];
}

/**
 * SHA-256 for the PKCE challenge. WebCrypto's digest exists only in secure contexts, and a hub on
 * the LAN is usually plain http://<address>: then this small implementation (FIPS 180-4) does it.
 */
async function sha256(text: string): Promise<Uint8Array> {
  const data = new TextEncoder().encode(text);
  if (globalThis.crypto?.subtle) return new Uint8Array(await crypto.subtle.digest('SHA-256', data));
  return sha256Bytes(data);
}

const K = Uint32Array.from(
  '428a2f98 71374491 b5c0fbcf e9b5dba5 3956c25b 59f111f1 923f82a4 ab1c5ed5 d807aa98 12835b01 243185be 550c7dc3 72be5d74 80deb1fe 9bdc06a7 c19bf174 e49b69c1 efbe4786 0fc19dc6 240ca1cc 2de92c6f 4a7484aa 5cb0a9dc 76f988da 983e5152 a831c66d b00327c8 bf597fc7 c6e00bf3 d5a79147 06ca6351 14292967 27b70a85 2e1b2138 4d2c6dfc 53380d13 650a7354 766a0abb 81c2c92e 92722c85 a2bfe8a1 a81a664b c24b8b70 c76c51a3 d192e819 d6990624 f40e3585 106aa070 19a4c116 1e376c08 2748774c 34b0bcb5 391c0cb3 4ed8aa4a 5b9cca4f 682e6ff3 748f82ee 78a5636f 84c87814 8cc70208 90befffa a4506ceb bef9a3f7 c67178f2'
    .split(' ')
    .map((h) => Number.parseInt(h, 16)),
);

export function sha256Bytes(data: Uint8Array): Uint8Array {
  const length = data.length;
  const padded = new Uint8Array(Math.ceil((length + 9) / 64) * 64);
  padded.set(data);
  padded[length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor((length * 8) / 2 ** 32));
  view.setUint32(padded.length - 4, (length * 8) >>> 0);
  const h = Uint32Array.from([
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
  ]);
  const w = new Uint32Array(64);
  const rotr = (x: number, n: number) => (x >>> n) | (x << (32 - n));
  for (let offset = 0; offset < padded.length; offset += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(offset + i * 4);
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15]!;
      const b = w[i - 2]!;
      const s0 = rotr(a, 7) ^ rotr(a, 18) ^ (a >>> 3);
      const s1 = rotr(b, 17) ^ rotr(b, 19) ^ (b >>> 10);
      w[i] = (w[i - 16]! + s0 + w[i - 7]! + s1) >>> 0;
    }
    let [a, b, c, d, e, f, g, hh] = h as unknown as [
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    for (let i = 0; i < 64; i++) {
      const t1 = (hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i]! + w[i]!) >>> 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) >>> 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) >>> 0;
    }
    h[0]! += a;
    h[1]! += b;
    h[2]! += c;
    h[3]! += d;
    h[4]! += e;
    h[5]! += f;
    h[6]! += g;
    h[7]! += hh;
  }
  const out = new Uint8Array(32);
  const outView = new DataView(out.buffer);
  for (let i = 0; i < 8; i++) outView.setUint32(i * 4, h[i]!);
  return out;
}
