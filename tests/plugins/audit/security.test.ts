/**
 * Authentication, the audit trail, rate-limit tiers, the directory webhook, CORS and the
 * response headers of the audit routes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeMicrosoft } from '../../fakes/microsoft/fake-microsoft.js';
import { directoryAudit } from '../../fakes/microsoft/fixtures.js';
import { appPerTest, jsonInit, seed } from './helpers.js';
import { idpAuthEnv, type LocalIdp, startLocalIdp } from './idp.js';

const T0 = Date.UTC(2025, 4, 1);
let idp: LocalIdp;

beforeAll(async () => {
  idp = await startLocalIdp();
});
afterAll(() => idp.stop());
const app = appPerTest();

const authEnv = () => idpAuthEnv(idp);
const bearer = (token: string, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${token}` },
});

describe('bearer authentication (AUTH_ENABLED)', () => {
  it('refuses a missing or invalid token with 401 and a challenge, and accepts a valid one', async () => {
    const t = await app(authEnv());
    const none = await t.json('/api/events');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="meshhub-audit"');
    expect(none.headers.get('content-type')).toBe('application/problem+json');
    for (const token of [
      await idp.token({}, { audience: 'api://someone-else' }),
      await idp.token({}, { expiresIn: '-1m' }),
      await idp.token({}, { issuer: 'https://evil.example/' }),
      'not.a.jwt',
    ]) {
      const res = await t.json('/api/events', bearer(token));
      expect(res.status).toBe(401);
      expect(res.body.detail).toBe('the bearer token is not valid');
      expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
    }
    expect((await t.json('/api/events', bearer(await idp.token({ roles: ['auditor'] })))).status).toBe(200);
  });

  it('leaves the frontend config routes and the webhook open', async () => {
    const t = await app({ ...authEnv(), AUTH_CLIENT_ID: 'spa-client' });
    const auth = await t.json('/api/config/auth');
    expect(auth.status).toBe(200);
    expect(auth.body).toEqual({
      enabled: true,
      status: 'on',
      issuer: idp.issuer,
      audience: idp.audience,
      client_id: 'spa-client',
      roles_claim: 'roles',
    });
    expect((await t.json('/api/config/features')).body).toMatchObject({
      version: expect.any(String),
      ai_features_enabled: false,
      auth: 'on',
    });
    expect((await t.json('/api/webhooks/directory?validationToken=abc', { method: 'POST' })).status).toBe(
      404,
    );
  });

  it('fails closed when enabled with no identity provider: 503 on token routes, "misconfigured" for the frontend', async () => {
    // A half-configured provider (AUTH_ISSUER alone) stops the hub at start-up like any invalid
    // setting (tests/auth/local-issuer.test.ts); none at all is the spec's "misconfigured".
    const t = await app({ AUTH_ENABLED: 'true' });
    const res = await t.json('/api/events', bearer(await idp.token()));
    expect(res.status).toBe(503);
    expect((await t.json('/api/config/auth')).body).toMatchObject({
      enabled: true,
      status: 'misconfigured',
      missing: ['AUTH_JWKS_URL', 'AUTH_ISSUER', 'AUTH_AUDIENCE'],
    });
  });

  it('reads roles from AUDIT_ROLES_CLAIM and gates the admin fetch by AUDIT_ADMIN_ROLES', async () => {
    const t = await app({
      ...authEnv(),
      AUDIT_ROLES_CLAIM: 'realm_access.roles',
      AUDIT_ADMIN_ROLES: 'Audit.Admin',
    });
    const reader = await idp.token({ realm_access: { roles: ['auditor'] } });
    const admin = await idp.token({ realm_access: { roles: ['Audit.Admin'] } });
    expect((await t.json('/api/fetch', bearer(reader, { method: 'POST' }))).status).toBe(403);
    // Allowed through, then 409: this hub has no Microsoft credentials.
    expect((await t.json('/api/fetch', bearer(admin, { method: 'POST' }))).status).toBe(409);
  });
});

describe('the internal audit trail', () => {
  it('records every mutating request with the verified caller, and no reads', async () => {
    const t = await app(authEnv());
    seed(t.repos, [{ at: T0 }]);
    const token = await idp.token({
      sub: 'user-42',
      preferred_username: 'carol@contoso.com',
      roles: ['admin'],
    });
    await t.json('/api/events/1/tags', bearer(token, jsonInit('PATCH', { tags: ['reviewed'] })));
    await t.json('/api/events/1/comments', jsonInit('POST', { text: 'no token' }));
    await t.json('/api/events', bearer(token));
    const rows = t.repos.trail.latest(10).reverse();
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({
      method: 'PATCH',
      path: '/api/events/1/tags',
      status: 200,
      subject: 'user-42',
      username: 'carol@contoso.com',
      issuer: idp.issuer,
      roles: '["admin"]',
    });
    expect(JSON.parse(rows[0]!.detail!)).toEqual({
      action: 'set-tags',
      event: '1',
      before: [],
      after: ['reviewed'],
    });
    expect(rows[0]!.request_id).toEqual(expect.any(String));
    expect(rows[1]).toMatchObject({ method: 'POST', status: 401, subject: null, username: 'anonymous' });
    expect(JSON.stringify(rows)).not.toContain(token);
  });
});

describe('rate-limit tiers', () => {
  it('limits writes, reads and admin fetches separately; config routes are exempt', async () => {
    const t = await app({ RATE_LIMIT_WRITE: '2/1m', RATE_LIMIT_DEFAULT: '3/1m', RATE_LIMIT_FETCH: '1/1h' });
    seed(t.repos, [{ at: T0 }]);
    const patch = () => t!.json('/api/events/1/tags', jsonInit('PATCH', { tags: ['a'] }));
    expect((await patch()).status).toBe(200);
    expect((await patch()).status).toBe(200);
    const limited = await patch();
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited.body).toMatchObject({ status: 429, tier: 'write' });

    for (let i = 0; i < 3; i++) expect((await t.json('/api/events')).status).toBe(200);
    expect((await t.json('/api/filter-options')).status).toBe(429);
    for (let i = 0; i < 20; i++) expect((await t.json('/api/config/auth')).status).toBe(200);
    expect((await t.json('/api/config/features')).status).toBe(200);

    expect((await t.json('/api/fetch', { method: 'POST' })).status).toBe(409);
    expect((await t.json('/api/fetch', { method: 'POST' })).status).toBe(429);
    expect(await t.registry.metrics()).toMatch(/meshhub_audit_rate_limited_total\{tier="write"\} 1/);
  });
});

describe('POST /api/webhooks/directory', () => {
  let fake: FakeMicrosoft;
  const secret = 'a-client-state-of-some-length';
  beforeAll(async () => {
    fake = new FakeMicrosoft();
    await fake.start();
  });
  afterAll(() => fake.stop());

  it('answers the validation handshake with the decoded token as text/plain', async () => {
    const t = await app({ WEBHOOK_CLIENT_SECRET: secret });
    const token = 'Validation: Testing client application reachability for subscription Request-Id: 2a9c&x=1';
    const res = await t.request(`/api/webhooks/directory?validationToken=${encodeURIComponent(token)}`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await res.text()).toBe(token);
  });

  it('refuses notifications with a wrong or missing clientState and fetches early on the right one', async () => {
    const t = await app({ ...fake.env(), AUDIT_SOURCES: 'directory', WEBHOOK_CLIENT_SECRET: secret });
    fake.directoryAudits.push(directoryAudit(1, Date.now() - 60_000));
    const notification = (clientState?: string) => ({
      value: [
        {
          subscriptionId: 'sub-1',
          changeType: 'updated',
          resource: 'users/1',
          tenantId: fake.tenantId,
          ...(clientState ? { clientState } : {}),
        },
      ],
    });
    const wrong = await t.json('/api/webhooks/directory', jsonInit('POST', notification('not-the-secret')));
    expect(wrong.status).toBe(403);
    expect(wrong.body.errors).toEqual([{ field: 'value.clientState', message: 'does not match' }]);
    expect((await t.json('/api/webhooks/directory', jsonInit('POST', notification()))).status).toBe(403);
    expect((await t.json('/api/webhooks/directory', jsonInit('POST', { value: [] }))).status).toBe(400);
    await t.collector.idle();
    expect(fake.requestsTo('graph')).toHaveLength(0);

    const ok = await t.request('/api/webhooks/directory', jsonInit('POST', notification(secret)));
    expect(ok.status).toBe(202);
    await t.collector.idle();
    expect(fake.requestsTo('graph', '/directoryAudits')).toHaveLength(1);
    expect(t.db.prepare('SELECT count(*) FROM audit_events').pluck().get()).toBe(1);
    // The two refused notifications are one counted refusal row (issue 14: bounded refusals).
    const trail = t.repos.trail.latest(10).map((r) => [r.status, r.username, r.count]);
    expect(trail).toEqual([
      [202, 'graph-webhook', 1],
      [400, 'graph-webhook', 1],
      [403, 'graph-webhook', 2],
    ]);
  });
});

describe('response headers', () => {
  it('sends a CSP allowing the sign-in host, nosniff and no-store on API answers and errors', async () => {
    const t = await app(authEnv());
    for (const path of ['/api/config/auth', '/api/events', '/api/events/nope']) {
      const res = await t.request(path);
      const csp = res.headers.get('content-security-policy')!;
      const origin = new URL(idp.issuer).origin;
      expect(csp).toContain(`connect-src 'self' ${origin}`);
      expect(csp).toContain(`frame-src ${origin}`);
      expect(csp).toContain(`form-action 'self' ${origin}`);
      expect(csp).toContain("frame-ancestors 'none'");
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('cache-control')).toBe('no-store');
    }
  });

  it('answers CORS preflights for CORS_ORIGINS only', async () => {
    const t = await app({ CORS_ORIGINS: 'https://audit.contoso.com' });
    const preflight = (origin: string) =>
      t!.request('/api/events/1/tags', {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'PATCH',
          'access-control-request-headers': 'authorization,content-type',
        },
      });
    const allowed = await preflight('https://audit.contoso.com');
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://audit.contoso.com');
    expect(allowed.headers.get('access-control-allow-methods')).toContain('PATCH');
    const other = await preflight('https://evil.example');
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('keeps a wildcard in CORS_ORIGINS, even with auth on', async () => {
    const t = await app({ ...authEnv(), CORS_ORIGINS: '*' });
    const res = await t.request('/api/config/auth', { headers: { origin: 'https://anywhere.example' } });
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
  });
});
