/**
 * Signing in to the audit console in real Chromium (issue 15 "Sign-in", spec "Authentication"):
 * a hub with PLUGINS=audit and AUTH_ENABLED against the loopback OpenID Connect fake (discovery,
 * authorize with a sign-in form, token with the PKCE check, JWKS), whose events come from the
 * loopback Microsoft fake through the real collector. The auth button in its three states
 * ("Auth: OFF", "Auth: misconfigured" with the hub up and the audit routes at 503, the signed-in
 * user); the access token used when its audience is the API's, the ID token when it is not;
 * tokens never in localStorage; an expired token (seen by the page, or refused by the hub) sends
 * the user to sign in and back to the same search; privacy-gated events invisible to a user
 * without the role; the CSP allowing the provider's origin for connect, frame and form-action
 * only; "Fetch now" only for a user the hub lets fetch (AUDIT_ADMIN_ROLES); a signed-in user
 * without a reader role told "not allowed" in plain words, and a reader's change refused in plain
 * words (issue 23). Every page fails its test on a console error.
 */
import type { Page, Request } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeMicrosoft } from '../fakes/microsoft/fake-microsoft.js';
import { directoryAudit } from '../fakes/microsoft/fixtures.js';
import { type FakeOidc, startFakeOidc } from '../fakes/oidc/fake-oidc.js';
import { type TestHub, waitFor } from '../helpers/hub.js';
import { QUIET_ENV } from '../plugins/audit/helpers.js';
import { describeInBrowser, type GuardedPage, useGuardedPages } from './helpers/browser.js';
import type { BrowserWindow } from './helpers/dom.js';
import { startUiHub } from './helpers/hubs.js';

const MIN = 60_000;
/** The operation PRIVACY_SENSITIVE_OPERATIONS hides from callers without PRIVACY_SERVICE_ROLES. */
const GATED = 'Reset user password';
const EVENTS = 12;
const GATED_EVENTS = 3;
const SESSION_KEY = 'meshhub.audit.session';

type OidcFake = FakeOidc & { allowRedirect(uri: string): void };

const claimsOf = (jwt: string | undefined): Record<string, unknown> =>
  JSON.parse(Buffer.from(jwt?.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;

const rows = (page: Page) => page.locator('[data-testid="audit-events"] tbody tr');

describeInBrowser('audit console sign-in', () => {
  let microsoft: FakeMicrosoft;
  let oidc: OidcFake;
  /** AUTH_ENABLED with the provider complete. */
  let hub: TestHub;
  /** AUTH_ENABLED with only AUTH_ISSUER of the three provider settings. */
  let misconfigured: TestHub;
  /** AUTH_ENABLED off. */
  let open: TestHub;
  const pages = useGuardedPages();

  beforeAll(async () => {
    microsoft = new FakeMicrosoft();
    await microsoft.start();
    // The audience the hub expects is the console's client id: the ID token's `aud` (Entra ID's
    // set-up when one app registration is both the console and the API).
    oidc = await startFakeOidc({ audience: 'meshhub-console' });
    oidc.users.set('ana', { name: 'Ana Auditor', roles: ['auditor'] });
    oidc.users.set('pia', { name: 'Pia Privacy', roles: ['auditor', 'privacy-officer', 'audit-admin'] });
    // Issue 23: a messaging subscriber signed in with the same provider reads no audit data.
    oidc.users.set('sam', { name: 'Sam Subscriber', roles: ['subscriber'] });
    const now = Date.now();
    for (let i = 0; i < EVENTS; i++) {
      microsoft.directoryAudits.push(
        directoryAudit(i + 1, now - (i + 2) * 5 * MIN, {
          user: i % 2 ? 'erin@contoso.com' : 'finn@contoso.com',
          activity: i < GATED_EVENTS ? GATED : 'Add member to group',
        }),
      );
    }
    const audit = { PLUGINS: 'audit', ...QUIET_ENV, ...microsoft.env(), AUDIT_SOURCES: 'directory' };
    [hub, misconfigured, open] = await Promise.all([
      startUiHub({
        ...audit,
        AUDIT_FETCH_ON_START: 'true',
        AUTH_ENABLED: 'true',
        AUTH_JWKS_URL: oidc.jwksUrl,
        AUTH_ISSUER: oidc.issuer,
        AUTH_AUDIENCE: oidc.audience,
        AUTH_CLIENT_ID: oidc.clientId,
        PRIVACY_SENSITIVE_OPERATIONS: GATED,
        PRIVACY_SERVICE_ROLES: 'privacy-officer',
        AUDIT_ADMIN_ROLES: 'audit-admin',
      }),
      startUiHub({ ...audit, AUTH_ENABLED: 'true', AUTH_ISSUER: oidc.issuer, AUTH_CLIENT_ID: oidc.clientId }),
      startUiHub(audit),
    ]);
    oidc.allowRedirect(`${hub.baseUrl}/audit/callback`);
    const token = await oidc.mint('pia');
    await waitFor(
      async () => {
        const res = await fetch(`${hub.baseUrl}/api/events?limit=100`, {
          headers: { authorization: `Bearer ${token}` },
        });
        const page = (await res.json()) as { data?: unknown[] };
        return page.data?.length === EVENTS || undefined;
      },
      20_000,
      `${EVENTS} events stored`,
    );
  });

  afterAll(async () => {
    await Promise.all([hub?.stop(), misconfigured?.stop(), open?.stop()]);
    await Promise.all([oidc?.stop(), microsoft?.stop()]);
  });

  /** From the console's Sign in through the provider's form, back to the console. */
  async function signIn(page: Page, login: string): Promise<void> {
    await page
      .getByRole('region', { name: 'Sign in to the audit console' })
      .getByRole('button', { name: 'Sign in' })
      .click();
    await page.waitForURL((url) => url.origin === oidc.issuer && url.pathname === '/authorize');
    await page.getByLabel('Account').fill(login);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(
      (url) => url.href.startsWith(`${hub.baseUrl}/audit`) && url.pathname !== '/audit/callback',
    );
  }

  /** A new guarded page at `path` on the hub, signed in there as `login`. */
  async function signedInAt(path: string, login: string): Promise<GuardedPage> {
    const guarded = await pages.open();
    await guarded.page.goto(`${hub.baseUrl}${path}`);
    await signIn(guarded.page, login);
    return guarded;
  }

  /** Puts `token` in the page's stored session, which believes it expires `expiresInMs` from now. */
  async function storeSessionToken(page: Page, token: string, expiresInMs: number): Promise<void> {
    await page.evaluate(
      ([key, token, expiresInMs]) => {
        const w = globalThis as unknown as BrowserWindow;
        const session = JSON.parse(w.sessionStorage.getItem(key)!) as Record<string, unknown>;
        w.sessionStorage.setItem(
          key,
          JSON.stringify({ ...session, token, expiresAt: Date.now() + expiresInMs }),
        );
      },
      [SESSION_KEY, token, expiresInMs] as const,
    );
  }

  /** Opens `path`, which sends the page to the provider; signs in as ana, back to `path`. */
  async function returnAfterSigningInAgain(page: Page, path: string): Promise<void> {
    await page.goto(`${hub.baseUrl}${path}`);
    await page.waitForURL((url) => url.origin === oidc.issuer && url.pathname === '/authorize');
    await page.getByLabel('Account').fill('ana');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(`${hub.baseUrl}${path}`);
  }

  /** The Authorization headers the page sent to the audit API. */
  function bearersOf(page: Page): string[] {
    const seen: string[] = [];
    page.on('request', (r: Request) => {
      const auth = r.headers().authorization;
      if (r.url().startsWith(`${hub.baseUrl}/api/`) && auth) seen.push(auth.replace(/^Bearer /, ''));
    });
    return seen;
  }

  it('shows "Auth: OFF" with auth off, and "Auth: misconfigured" with a partial provider: the hub runs, the audit routes answer 503', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    await page.goto(`${open.baseUrl}/audit`);
    await expect.poll(() => page.getByTestId('auth-button').textContent()).toBe('Auth: OFF');
    await expect.poll(() => rows(page).count()).toBe(0);
    await expect.poll(() => page.locator('.audit-empty').count()).toBe(1);

    const auth = (await (await fetch(`${misconfigured.baseUrl}/api/config/auth`)).json()) as Record<
      string,
      unknown
    >;
    expect(auth).toMatchObject({
      enabled: true,
      status: 'misconfigured',
      missing: ['AUTH_JWKS_URL', 'AUTH_AUDIENCE'],
    });
    const events = await fetch(`${misconfigured.baseUrl}/api/events`);
    expect(events.status).toBe(503);
    // The rest of the hub runs on.
    expect((await fetch(`${misconfigured.baseUrl}/api/v1/nodes`)).status).toBe(200);

    guarded.expectFailedRequests(/\/api\/filter-options$/);
    await page.goto(`${misconfigured.baseUrl}/audit?actor=erin`);
    const button = page.getByTestId('auth-button');
    await expect.poll(() => button.textContent()).toBe('Auth: misconfigured');
    expect(await button.getAttribute('title')).toContain('AUTH_JWKS_URL, AUTH_AUDIENCE are missing');
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toContain('Sign-in is switched on (AUTH_ENABLED) but not fully set up, so the audit data is locked.');
    // No sign-in is offered that could not work.
    expect(await page.getByRole('button', { name: 'Sign in' }).count()).toBe(0);
  });

  it('signs in with the code flow and PKCE, comes back to the same search, calls the API with the access token, and keeps tokens out of localStorage', async () => {
    oidc.accessAudience = oidc.audience;
    const guarded = await pages.open();
    const { page } = guarded;
    const sent = bearersOf(page);
    const search = '/audit?actor=erin&services=directory&limit=25';
    await page.goto(`${hub.baseUrl}${search}`);
    await expect.poll(() => page.getByTestId('auth-button').textContent()).toBe('Sign in');
    expect(await page.getByRole('heading', { name: 'Sign in to the audit console' }).count()).toBe(1);
    const requestsBefore = oidc.tokenRequests.length;

    await signIn(page, 'ana');
    expect(new URL(page.url()).pathname + new URL(page.url()).search).toBe(search);
    await expect
      .poll(() => page.getByTestId('auth-button').textContent())
      .toBe('Signed in as Ana AuditorSign out');
    await expect.poll(() => rows(page).count()).toBeGreaterThan(0);
    expect(new Set(await rows(page).locator('td[data-label="Actor"]').allTextContents())).toEqual(
      new Set(['erin@contoso.com']),
    );

    // The token request: a public client (no secret) proving PKCE with its verifier.
    expect(oidc.tokenRequests.length).toBe(requestsBefore + 1);
    const tokenRequest = oidc.tokenRequests.at(-1)!;
    expect(tokenRequest.get('grant_type')).toBe('authorization_code');
    expect(tokenRequest.get('code_verifier')).toMatch(/^[A-Za-z0-9_-]{43,128}$/);
    expect(tokenRequest.has('client_secret')).toBe(false);

    // The access token's audience is the API's: it is the one sent (it has `scp`, no `nonce`).
    expect(sent.length).toBeGreaterThan(0);
    for (const token of sent) {
      expect(claimsOf(token)).toMatchObject({ aud: oidc.audience, scp: 'access', preferred_username: 'ana' });
      expect(claimsOf(token).nonce).toBeUndefined();
    }

    // Never in localStorage; in this tab's sessionStorage, which the spec allows.
    const storage = await page.evaluate(() => {
      const w = globalThis as unknown as {
        localStorage: { length: number; key(i: number): string | null; getItem(k: string): string | null };
        sessionStorage: { getItem(k: string): string | null };
      };
      const local: string[] = [];
      for (let i = 0; i < w.localStorage.length; i++) {
        const key = w.localStorage.key(i)!;
        local.push(`${key}=${w.localStorage.getItem(key)}`);
      }
      return { local, session: w.sessionStorage.getItem('meshhub.audit.session') };
    });
    for (const entry of storage.local) expect(entry).not.toContain(sent[0]!.split('.')[2]!);
    expect(storage.local.join('\n')).not.toMatch(/eyJ[\w-]+\.eyJ/);
    expect(storage.session).toContain(sent[0]);

    // Sign out: the token is gone from the tab too.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => page.getByTestId('auth-button').textContent()).toBe('Sign in');
    expect(
      await page.evaluate(
        (key) => (globalThis as unknown as BrowserWindow).sessionStorage.getItem(key),
        SESSION_KEY,
      ),
    ).toBeNull();
  });

  it('falls back to the ID token when the access token is meant for another audience', async () => {
    oidc.accessAudience = 'https://graph.microsoft.com';
    try {
      const guarded = await pages.open();
      const { page } = guarded;
      const sent = bearersOf(page);
      await page.goto(`${hub.baseUrl}/audit?actor=finn`);
      await signIn(page, 'ana');
      await expect.poll(() => rows(page).count()).toBeGreaterThan(0);
      expect(sent.length).toBeGreaterThan(0);
      for (const token of sent) {
        const claims = claimsOf(token);
        expect(claims.aud).toBe(oidc.clientId);
        expect(typeof claims.nonce).toBe('string');
        expect(claims.scp).toBeUndefined();
      }
      // The hub would have refused the access token the provider issued alongside.
      const access = await oidc.mint('ana');
      expect(
        (await fetch(`${hub.baseUrl}/api/events`, { headers: { authorization: `Bearer ${access}` } })).status,
      ).toBe(401);
    } finally {
      oidc.accessAudience = oidc.audience;
    }
  });

  it('sends the user to sign in and back to the same search when the token expired, seen by the page or refused by the hub', async () => {
    const guarded = await signedInAt('/audit?actor=erin', 'ana');
    const { page } = guarded;
    await expect.poll(() => rows(page).count()).toBeGreaterThan(0);
    const signIns = oidc.tokenRequests.length;

    // 1. The page knows the token's `exp` has passed: it signs in again before calling the API.
    const expired = await oidc.mint('ana', { lifetimeS: -120 });
    await storeSessionToken(page, expired, -120_000);
    const search = '/audit?actor=erin&result=success&range=7d';
    await returnAfterSigningInAgain(page, search);
    await expect.poll(() => rows(page).count()).toBeGreaterThan(0);
    expect(await page.getByLabel('Actor').inputValue()).toBe('erin');
    expect(await page.getByLabel('Result').inputValue()).toBe('success');
    expect(oidc.tokenRequests.length).toBe(signIns + 1);

    // 2. The page believes the token good, the hub refuses it (expired: 401): the same trip.
    guarded.expectFailedRequests(/\/api\//);
    await storeSessionToken(page, expired, 3_600_000);
    const other = '/audit?actor=finn&services=directory';
    await returnAfterSigningInAgain(page, other);
    await expect.poll(() => rows(page).count()).toBeGreaterThan(0);
    expect(new Set(await rows(page).locator('td[data-label="Actor"]').allTextContents())).toEqual(
      new Set(['finn@contoso.com']),
    );
    expect(oidc.tokenRequests.length).toBe(signIns + 2);
  });

  it('never shows privacy-gated events to a user without the privacy role', async () => {
    const guarded = await signedInAt('/audit', 'ana');
    const { page } = guarded;
    await expect.poll(() => rows(page).count()).toBe(EVENTS - GATED_EVENTS);
    expect(await rows(page).locator('td[data-label="Operation"]').allTextContents()).not.toContain(GATED);
    // Not offered as a suggestion either.
    const suggestions = await page
      .locator('datalist option')
      .evaluateAll((options) => options.map((o) => (o as unknown as { value: string }).value));
    expect(suggestions).not.toContain(GATED);
    // Searching for it finds nothing.
    await page.goto(`${hub.baseUrl}/audit?operation=${encodeURIComponent(GATED)}`);
    await expect
      .poll(() => page.locator('.audit-empty').textContent())
      .toBe('No events match these filters.');
    // A link to one of them: not shown, in plain words.
    const pia = await oidc.mint('pia');
    const all = (await (
      await fetch(`${hub.baseUrl}/api/events?limit=100`, { headers: { authorization: `Bearer ${pia}` } })
    ).json()) as { data: Array<{ id: string; operation: string }> };
    const gated = all.data.find((e) => e.operation === GATED)!;
    guarded.expectFailedRequests(new RegExp(`/api/events/${gated.id}$`));
    await page.goto(`${hub.baseUrl}/audit?event=${gated.id}`);
    const drawer = page.getByRole('dialog');
    await expect.poll(() => drawer.getByRole('alert').textContent()).toMatch(/^Not allowed: /);
    expect(await drawer.textContent()).not.toContain(GATED);
    await guarded.close();

    // A user with the role sees all of them, in a tab of their own.
    const { page: second } = await pages.open();
    await second.goto(`${hub.baseUrl}/audit`);
    await signIn(second, 'pia');
    await expect.poll(() => rows(second).count()).toBe(EVENTS);
    const operations = await rows(second).locator('td[data-label="Operation"]').allTextContents();
    expect(operations.filter((o) => o === GATED)).toHaveLength(GATED_EVENTS);
  });

  it('shows "Fetch now" only to a user the hub lets fetch (AUDIT_ADMIN_ROLES)', async () => {
    const guarded = await signedInAt('/audit/sources', 'ana');
    const { page } = guarded;
    const directory = page.locator('[data-testid="source-health"] tr[data-source="directory"]');
    await expect.poll(() => directory.locator('td[data-label="Status"]').textContent()).toBe('OK');
    expect(await page.getByRole('button', { name: 'Fetch now' }).count()).toBe(0);
    // The hub refuses her anyway.
    const ana = await oidc.mint('ana');
    const refused = await fetch(`${hub.baseUrl}/api/fetch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ana}` },
    });
    expect(refused.status).toBe(403);
    await guarded.close();

    const { page: second } = await pages.open();
    await second.goto(`${hub.baseUrl}/audit/sources`);
    await signIn(second, 'pia');
    await second.getByRole('button', { name: 'Fetch now' }).click();
    await expect
      .poll(() => second.getByTestId('fetch-status').textContent())
      .toMatch(/^(Fetch started for directory\.|A fetch was already queued; it runs shortly\.)$/);
  });

  it('tells a signed-in user without a reader role that the account is not allowed, in plain words', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    guarded.expectFailedRequests(/\/api\/(events|filter-options|saved-searches)(\?.*)?$/);
    await page.goto(`${hub.baseUrl}/audit`);
    await signIn(page, 'sam');
    const refusal = page.getByRole('alert').first();
    await expect.poll(() => refusal.getByRole('heading').textContent()).toBe('Not allowed');
    expect(await refusal.locator('p').textContent()).toBe(
      'Your account is not allowed to read audit events. Ask an administrator for the auditor role.',
    );
    expect(await rows(page).count()).toBe(0);
  });

  it('refuses a reader’s change in plain words, and the tags stay as they were', async () => {
    const guarded = await signedInAt('/audit?actor=erin', 'ana');
    const { page } = guarded;
    await expect.poll(() => rows(page).count()).toBeGreaterThan(0);
    const id = await rows(page).first().getAttribute('data-event-id');
    guarded.expectFailedRequests(/\/api\/events\/\d+\/tags$/);
    await rows(page).first().click();
    const drawer = page.getByRole('dialog');
    await drawer.getByLabel('Add a tag', { exact: true }).fill('reviewed');
    await drawer.getByLabel('Add a tag', { exact: true }).press('Enter');
    await expect.poll(() => drawer.getByText(/^Your account may not change audit data/).count()).toBe(1);
    const pia = await oidc.mint('pia');
    const event = (await (
      await fetch(`${hub.baseUrl}/api/events/${id}`, { headers: { authorization: `Bearer ${pia}` } })
    ).json()) as { tags: string[] };
    expect(event.tags).toEqual([]);
  });

  it('allows the identity provider’s origin in the CSP for connect-src, frame-src and form-action, and nowhere else', async () => {
    const csp = async (url: string) => {
      const res = await fetch(url);
      await res.arrayBuffer();
      const header = res.headers.get('content-security-policy') ?? '';
      return new Map(
        header.split(';').map((d) => {
          const [name, ...values] = d.trim().split(/\s+/);
          return [name!, values] as const;
        }),
      );
    };
    for (const url of [`${hub.baseUrl}/audit`, `${hub.baseUrl}/api/config/auth`]) {
      const policy = await csp(url);
      expect(policy.get('connect-src'), url).toEqual(["'self'", oidc.issuer]);
      expect(policy.get('form-action'), url).toEqual(["'self'", oidc.issuer]);
      expect(policy.get('frame-src'), url).toEqual([oidc.issuer]);
      for (const [directive, values] of policy) {
        if (['connect-src', 'form-action', 'frame-src'].includes(directive)) continue;
        expect(values, `${url}: ${directive}`).not.toContain(oidc.issuer);
      }
    }
    // Without a complete provider there is no sign-in host to allow.
    for (const base of [misconfigured.baseUrl, open.baseUrl]) {
      const policy = await csp(`${base}/audit`);
      expect(policy.get('connect-src')).toEqual(["'self'"]);
      expect(policy.get('form-action')).toEqual(["'self'"]);
      expect(policy.get('frame-src') ?? ["'none'"]).toEqual(["'none'"]);
    }
  });
});
