/**
 * OAuth 2.0 client credentials against the Microsoft identity platform:
 * `POST {login}/{tenant}/oauth2/v2.0/token` with `client_id`, `client_secret`,
 * `scope={resource}/.default` and `grant_type=client_credentials`, form-encoded. The token is
 * cached until a minute before `expires_in` runs out; concurrent callers share one request.
 * The secret and the token are never logged or put in an error message.
 */
import type { Secret } from '../../../src/config/secret.js';
import { apiUrl, UpstreamError } from './upstream.js';

export interface TokenSource {
  get(signal?: AbortSignal): Promise<string>;
  invalidate(): void;
}

export interface ClientCredentials {
  loginBaseUrl: URL;
  tenantId: string;
  clientId: string;
  clientSecret: Secret;
  /** The resource's `.default` scope, e.g. `https://graph.microsoft.com/.default`. */
  scope: string;
  timeoutMs: number;
}

/** Expire cached tokens this long before the identity platform says they do. */
const EARLY_MS = 60_000;

export class ClientCredentialsTokens implements TokenSource {
  private token: { value: string; expiresAt: number } | undefined;
  private inFlight: Promise<string> | undefined;

  constructor(
    private readonly credentials: ClientCredentials,
    private readonly fetchImpl: typeof fetch = fetch,
    private readonly now: () => number = Date.now,
  ) {}

  get tokenUrl(): URL {
    return apiUrl(
      this.credentials.loginBaseUrl,
      `/${encodeURIComponent(this.credentials.tenantId)}/oauth2/v2.0/token`,
    );
  }

  get(signal?: AbortSignal): Promise<string> {
    if (this.token && this.token.expiresAt > this.now()) return Promise.resolve(this.token.value);
    this.inFlight ??= this.request(signal).finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  invalidate(): void {
    this.token = undefined;
  }

  private async request(signal?: AbortSignal): Promise<string> {
    const c = this.credentials;
    const body = new URLSearchParams({
      client_id: c.clientId,
      client_secret: c.clientSecret.reveal(),
      scope: c.scope,
      grant_type: 'client_credentials',
    });
    const timeout = AbortSignal.timeout(c.timeoutMs);
    let res: Response;
    try {
      res = await this.fetchImpl(this.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body,
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (error) {
      if (signal?.aborted) throw new UpstreamError('aborted', 'stopped');
      if (error instanceof UpstreamError) throw error;
      throw new UpstreamError('network', `no answer from the identity platform (${this.tokenUrl.host})`);
    }
    const text = await res.text().catch(() => '');
    let json: Record<string, unknown> = {};
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed && typeof parsed === 'object') json = parsed as Record<string, unknown>;
    } catch {
      // handled below by status and missing fields
    }
    if (!res.ok) {
      // `error` is an OAuth code like invalid_client; the AADSTS number says which problem.
      const code = typeof json.error === 'string' ? json.error : undefined;
      const aadsts =
        typeof json.error_description === 'string'
          ? /AADSTS\d+/.exec(json.error_description)?.[0]
          : undefined;
      const what = `the identity platform refused the token request (${res.status}${code ? ` ${code}` : ''}${aadsts ? ` ${aadsts}` : ''})`;
      if (res.status === 429 || res.status >= 500) {
        throw new UpstreamError(res.status === 429 ? 'throttled' : 'unavailable', what, {
          status: res.status,
        });
      }
      throw new UpstreamError('auth', what, { status: res.status, ...(code ? { code } : {}) });
    }
    const value = json.access_token;
    const expiresIn = Number(json.expires_in);
    if (typeof value !== 'string' || !value || !Number.isFinite(expiresIn)) {
      throw new UpstreamError(
        'malformed_response',
        'the identity platform answered without a usable access token',
      );
    }
    this.token = { value, expiresAt: this.now() + Math.max(0, expiresIn * 1000 - EARLY_MS) };
    return value;
  }
}

/** The `.default` scope of an API, from its base URL: `https://graph.microsoft.com/.default`. */
export function defaultScope(base: URL): string {
  return `${base.origin}/.default`;
}
