/**
 * The audit plugin's settings: defaults, every invalid value reported at once by name, secrets
 * never echoed, and the "misconfigured" auth state.
 */
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { loadAuditConfig } from '../../../plugins/audit/settings.js';
import { auditConfigProblems } from './helpers.js';

const problems = auditConfigProblems;

describe('loadAuditConfig', () => {
  it('has working defaults: Microsoft endpoints, every source, auth off, collection off without credentials', () => {
    const c = loadAuditConfig({});
    expect(c.credentials).toBeUndefined();
    expect(c.graphBaseUrl.href).toBe('https://graph.microsoft.com/');
    expect(c.managementBaseUrl.href).toBe('https://manage.office.com/');
    expect(c.loginBaseUrl.href).toBe('https://login.microsoftonline.com/');
    expect(c.sources).toEqual(['directory', 'device_management', 'exchange', 'sharepoint', 'teams']);
    expect(c).toMatchObject({
      fetchCron: '*/10 * * * *',
      overlapMs: 3_600_000,
      retentionDays: 90,
      auth: { enabled: false, state: 'off', rolesClaim: 'roles' },
    });
    expect(c.rateLimits.default).toEqual({ limit: 600, windowMs: 60_000 });
  });

  it('uses the tenant as PublisherIdentifier unless AUDIT_PUBLISHER_ID says otherwise', () => {
    const creds = { AUDIT_TENANT_ID: 't-1', AUDIT_CLIENT_ID: 'c-1', AUDIT_CLIENT_SECRET: 's' };
    expect(loadAuditConfig(creds).publisherId).toBe('t-1');
    expect(loadAuditConfig({ ...creds, AUDIT_PUBLISHER_ID: 'isv' }).publisherId).toBe('isv');
  });

  it('reports every invalid value at once, by name', () => {
    /** A setting and an invalid value for it. */
    const invalid: Array<[string, string]> = [
      ['AUDIT_GRAPH_BASE_URL', 'http://graph.example.com'],
      ['AUDIT_SOURCES', 'directory,fax'],
      ['AUDIT_FETCH_CRON', 'every minute'],
      ['AUDIT_OVERLAP', '1 hour'],
      ['RATE_LIMIT_WRITE', 'lots'],
      ['AUTH_ENABLED', 'maybe'],
      ['RETENTION_DAYS', '0'],
      ['WEBHOOK_CLIENT_SECRET', 'short'],
    ];
    // AUDIT_TENANT_ID alone is valid, but wants the other two credentials.
    const list = problems({ AUDIT_TENANT_ID: 'tenant', ...Object.fromEntries(invalid) });
    const names = list.map((p) => p.split(':')[0]);
    expect(names).toEqual(expect.arrayContaining(invalid.map(([name]) => name)));
    expect(list.find((p) => p.startsWith('AUDIT_GRAPH_BASE_URL'))).toContain('must use https');
    expect(names).toContain('AUDIT_CLIENT_ID, AUDIT_CLIENT_SECRET');
    expect(list.join('\n')).not.toContain('short');
  });

  it('wants all three credentials or none', () => {
    expect(problems({ AUDIT_TENANT_ID: 't', AUDIT_CLIENT_SECRET: 'secret-value' })).toEqual([
      'AUDIT_CLIENT_ID: required together with the other AUDIT_* credentials',
    ]);
  });

  it('checks base URLs against AUDIT_ALLOWED_HOSTS', () => {
    expect(
      problems({
        AUDIT_ALLOWED_HOSTS: 'graph.microsoft.com,*.office.com',
        AUDIT_LOGIN_BASE_URL: 'https://login.evil.example',
      }),
    ).toEqual([
      'AUDIT_LOGIN_BASE_URL: host login.evil.example is not in the allowlist (got "https://login.evil.example")',
    ]);
    expect(() =>
      loadAuditConfig({ AUDIT_ALLOWED_HOSTS: 'graph.microsoft.com,*.office.com,login.microsoftonline.com' }),
    ).not.toThrow();
  });

  it('never prints secrets', () => {
    const credentials = { AUDIT_TENANT_ID: 't', AUDIT_CLIENT_ID: 'c', AUDIT_CLIENT_SECRET: 'sup3r-s3cret' };
    const c = loadAuditConfig({ ...credentials, WEBHOOK_CLIENT_SECRET: 'webhook-secret-0123456789' });
    const shown = `${JSON.stringify(c)} ${inspect(c, { depth: 5 })} ${String(c.credentials?.clientSecret)}`;
    expect(shown).not.toContain('sup3r-s3cret');
    expect(shown).not.toContain('webhook-secret-0123456789');
    expect(c.credentials?.clientSecret.reveal()).toBe('sup3r-s3cret');
  });

  it('is "misconfigured", not an error, when AUTH_ENABLED and the hub has no identity provider; roles claim from AUDIT_ROLES_CLAIM or the hub\'s AUTH_ROLES_CLAIM', () => {
    expect(loadAuditConfig({ AUTH_ENABLED: 'true' }).auth).toMatchObject({
      state: 'misconfigured',
      missing: ['AUTH_JWKS_URL', 'AUTH_ISSUER', 'AUTH_AUDIENCE'],
      rolesClaim: 'roles',
    });
    // The provider is the hub's (AUTH_JWKS_URL, AUTH_ISSUER, AUTH_AUDIENCE, AUTH_ROLES_CLAIM).
    const provider = {
      jwksUrl: 'https://idp.example.com/jwks',
      issuer: 'https://idp',
      audience: 'api',
      rolesClaim: 'groups',
    };
    expect(loadAuditConfig({ AUTH_ENABLED: 'true' }, provider).auth).toMatchObject({
      state: 'on',
      missing: [],
      rolesClaim: 'groups',
    });
    expect(loadAuditConfig({ AUDIT_ROLES_CLAIM: 'roles2' }, provider).auth.rolesClaim).toBe('roles2');
  });
});
