/**
 * Issue 29, several tenants: AUDIT_TENANTS and each tenant's AUDIT_<NAME>_* settings. Every bad
 * form is one plain line naming the setting, all reported at once, never a secret; without
 * AUDIT_TENANTS the single-tenant settings are the tenant `default`, as before.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadAuditConfig } from '../../../plugins/audit/settings.js';
import { auditConfigProblems as problems, startAuditCli } from './helpers.js';

const SECRET_A = 'contoso-secret-never-shown-0123';
const SECRET_B = 'fabrikam-secret-never-shown-456';
const two = {
  AUDIT_TENANTS: 'contoso,fabrikam-eu',
  AUDIT_CONTOSO_TENANT_ID: 't-contoso',
  AUDIT_CONTOSO_CLIENT_ID: 'c-contoso',
  AUDIT_CONTOSO_CLIENT_SECRET: SECRET_A,
  AUDIT_FABRIKAM_EU_TENANT_ID: 't-fabrikam',
  AUDIT_FABRIKAM_EU_CLIENT_ID: 'c-fabrikam',
  AUDIT_FABRIKAM_EU_CLIENT_SECRET: SECRET_B,
};

describe('AUDIT_TENANTS', () => {
  it('gives each tenant its own credentials, publisher id and sources', () => {
    const c = loadAuditConfig({
      ...two,
      AUDIT_SOURCES: 'directory,exchange',
      AUDIT_FABRIKAM_EU_PUBLISHER_ID: 'isv-guid',
      AUDIT_FABRIKAM_EU_SOURCES: 'directory',
    });
    expect(c.tenants.map((t) => ({ ...t, clientSecret: t.clientSecret.reveal() }))).toEqual([
      {
        name: 'contoso',
        tenantId: 't-contoso',
        clientId: 'c-contoso',
        clientSecret: SECRET_A,
        publisherId: 't-contoso',
        sources: ['directory', 'exchange'],
      },
      {
        name: 'fabrikam-eu',
        tenantId: 't-fabrikam',
        clientId: 'c-fabrikam',
        clientSecret: SECRET_B,
        publisherId: 'isv-guid',
        sources: ['directory'],
      },
    ]);
  });

  it('keeps the single-tenant settings as the tenant "default"', () => {
    const c = loadAuditConfig({ AUDIT_TENANT_ID: 't-1', AUDIT_CLIENT_ID: 'c-1', AUDIT_CLIENT_SECRET: 's-1' });
    expect(c.tenants).toHaveLength(1);
    expect(c.tenants[0]).toMatchObject({
      name: 'default',
      tenantId: 't-1',
      clientId: 'c-1',
      publisherId: 't-1',
    });
    expect(loadAuditConfig({}).tenants).toEqual([]);
  });

  it.each([
    [{ AUDIT_TENANTS: 'Contoso' }, 'AUDIT_TENANTS: "Contoso" is not a tenant name'],
    [{ ...two, AUDIT_TENANTS: 'contoso,fabrikam-eu,contoso' }, 'AUDIT_TENANTS: names "contoso" twice'],
    [{ AUDIT_TENANTS: ' , ' }, 'AUDIT_TENANTS: must name at least one tenant'],
    [
      { ...two, AUDIT_TENANT_ID: 't' },
      'AUDIT_TENANT_ID: cannot be used with AUDIT_TENANTS: set each tenant’s AUDIT_<NAME>_* settings instead',
    ],
    [
      { ...two, AUDIT_CONTOSO_TENANT_ID: '', AUDIT_CONTOSO_CLIENT_ID: '' },
      'AUDIT_CONTOSO_TENANT_ID, AUDIT_CONTOSO_CLIENT_ID: required for tenant "contoso" in AUDIT_TENANTS',
    ],
    [
      { ...two, AUDIT_CONTOSO_SOURCES: 'directory,fax' },
      'AUDIT_CONTOSO_SOURCES: expected a comma-separated subset of',
    ],
    [
      { ...two, AUDIT_CONTOSSO_CLIENT_ID: 'typo' },
      'AUDIT_CONTOSSO_CLIENT_ID: names a tenant not in AUDIT_TENANTS',
    ],
    [{ AUDIT_FOO_TENANT_ID: 't' }, 'AUDIT_FOO_TENANT_ID: names a tenant not in AUDIT_TENANTS'],
  ])('refuses %o with one line naming the setting', (env, line) => {
    const list = problems(env as Record<string, string>);
    expect(list).toHaveLength(1);
    expect(list[0]!.startsWith(line)).toBe(true);
  });

  it('reports every problem at once and never echoes a secret', () => {
    const list = problems({
      AUDIT_TENANTS: 'contoso,Bad',
      AUDIT_CONTOSO_CLIENT_SECRET: SECRET_A,
      AUDIT_TYPO_CLIENT_SECRET: SECRET_B,
      AUDIT_CLIENT_SECRET: SECRET_B,
    });
    expect(list.map((p) => p.split(':')[0])).toEqual(
      expect.arrayContaining([
        'AUDIT_TENANTS',
        'AUDIT_CLIENT_SECRET',
        'AUDIT_CONTOSO_TENANT_ID, AUDIT_CONTOSO_CLIENT_ID',
        'AUDIT_TYPO_CLIENT_SECRET',
      ]),
    );
    expect(list.join('\n')).not.toContain(SECRET_A);
    expect(list.join('\n')).not.toContain(SECRET_B);
  });
});

describe('`meshhub start` with a per-tenant setting for an unlisted tenant', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('exits 1 with one plain line naming the setting, never its secret', () => {
    const dir = mkdtempSync(join(tmpdir(), 'meshhub-tenants-'));
    dirs.push(dir);
    const result = startAuditCli(dir, {
      HTTP_HOST: '127.0.0.1',
      ...two,
      AUDIT_FABRIKAM_CLIENT_SECRET: SECRET_B,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toBe(
      'meshhub: AUDIT_FABRIKAM_CLIENT_SECRET: names a tenant not in AUDIT_TENANTS\n',
    );
    expect(result.stdout + result.stderr).not.toContain(SECRET_B);
  });
});
