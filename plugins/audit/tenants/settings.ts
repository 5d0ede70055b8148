/**
 * Issue 29, several tenants: which Microsoft 365 tenants one hub collects, each with its own
 * credentials (README "Several tenants"). `AUDIT_TENANTS=contoso,fabrikam` names them; each name
 * N reads `AUDIT_<N>_TENANT_ID`, `AUDIT_<N>_CLIENT_ID`, `AUDIT_<N>_CLIENT_SECRET` (together),
 * `AUDIT_<N>_PUBLISHER_ID` and `AUDIT_<N>_SOURCES` (N upper-cased, `-` as `_`). Without
 * AUDIT_TENANTS, AUDIT_TENANT_ID / AUDIT_CLIENT_ID / AUDIT_CLIENT_SECRET / AUDIT_PUBLISHER_ID
 * are one tenant named `default`, as before tenants existed.
 */
import type { z } from 'zod';
import { list } from '../../../src/config/fields.js';
import { Secret } from '../../../src/config/secret.js';
import { DEFAULT_TENANT } from '../normalize.js';
import { isSourceName, SOURCE_NAMES, type SourceName } from '../sources.js';
import { TENANT_NAME } from './access.js';

export interface TenantConfig {
  /** The operator's short name (AUDIT_TENANTS), `default` for a single-tenant hub. */
  name: string;
  tenantId: string;
  clientId: string;
  clientSecret: Secret;
  /** Office 365 Management API `PublisherIdentifier` (the tenant GUID unless set). */
  publisherId?: string;
  sources: SourceName[];
}

const FIELDS = ['TENANT_ID', 'CLIENT_ID', 'CLIENT_SECRET', 'PUBLISHER_ID', 'SOURCES'] as const;
const REQUIRED = ['TENANT_ID', 'CLIENT_ID', 'CLIENT_SECRET'] as const;
type Field = (typeof FIELDS)[number];

/** Every per-tenant setting name (`AUDIT_CONTOSO_CLIENT_ID`): the config loader hands them over. */
export const TENANT_SETTING_NAMES = new RegExp(`^AUDIT_([A-Z0-9_]+)_(${FIELDS.join('|')})$`);

/** The settings slice's own keys (AUDIT_TENANTS); the per-tenant names are dynamic. */
export const tenantSettingsShape = {
  AUDIT_TENANTS: list.optional(),
};

const SINGLE = ['AUDIT_TENANT_ID', 'AUDIT_CLIENT_ID', 'AUDIT_CLIENT_SECRET', 'AUDIT_PUBLISHER_ID'] as const;

/** `contoso-eu` → `AUDIT_CONTOSO_EU_CLIENT_ID`. */
export function tenantSetting(name: string, field: Field): string {
  return `AUDIT_${name.toUpperCase().replaceAll('-', '_')}_${field}`;
}

function given(c: Partial<Record<string, unknown>>, key: string): string | undefined {
  const v = c[key];
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}

function parseSources(value: string | undefined): SourceName[] | undefined {
  if (value === undefined) return undefined;
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return names.length && names.every(isSourceName) ? [...new Set(names)] : undefined;
}

/** Every problem of the tenant settings, by setting name, in the slice's one pass. */
export function refineTenantSettings(c: Partial<Record<string, unknown>>, ctx: z.RefinementCtx): void {
  const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
  const dynamic = Object.keys(c).filter((k) => TENANT_SETTING_NAMES.test(k));
  const names = Array.isArray(c.AUDIT_TENANTS) ? (c.AUDIT_TENANTS as string[]) : undefined;
  const valid = new Set<string>();
  if (names) {
    if (!names.length)
      issue('AUDIT_TENANTS', 'must name at least one tenant (leave it unset for one tenant)');
    const seen = new Set<string>();
    for (const name of names) {
      if (!TENANT_NAME.test(name)) {
        issue(
          'AUDIT_TENANTS',
          `"${name}" is not a tenant name: lower-case letters, digits and "-", starting with a letter, at most 32 characters`,
        );
      } else if (seen.has(name)) issue('AUDIT_TENANTS', `names "${name}" twice`);
      else valid.add(name);
      seen.add(name);
    }
    for (const key of SINGLE) {
      if (given(c, key) !== undefined)
        issue(key, 'cannot be used with AUDIT_TENANTS: set each tenant’s AUDIT_<NAME>_* settings instead');
    }
    for (const name of valid) {
      const missing = REQUIRED.map((f) => tenantSetting(name, f)).filter((k) => given(c, k) === undefined);
      if (missing.length)
        issue(
          missing.join(', '),
          `required for tenant "${name}" in AUDIT_TENANTS (with its other credentials)`,
        );
      const sources = tenantSetting(name, 'SOURCES');
      if (given(c, sources) !== undefined && !parseSources(given(c, sources)))
        issue(sources, `expected a comma-separated subset of ${SOURCE_NAMES.join(', ')}`);
    }
  }
  const expected = new Set([...valid].flatMap((name) => FIELDS.map((f) => tenantSetting(name, f))));
  for (const key of dynamic) {
    if (!expected.has(key)) issue(key, 'names a tenant not in AUDIT_TENANTS');
  }
}

/** The tenants to collect, from settings that passed `refineTenantSettings`. */
export function tenantsFrom(
  c: Partial<Record<string, unknown>>,
  defaultSources: SourceName[],
): TenantConfig[] {
  const names = Array.isArray(c.AUDIT_TENANTS) ? (c.AUDIT_TENANTS as string[]) : undefined;
  if (!names) {
    const [tenantId, clientId, secret] = [
      given(c, 'AUDIT_TENANT_ID'),
      given(c, 'AUDIT_CLIENT_ID'),
      given(c, 'AUDIT_CLIENT_SECRET'),
    ];
    if (!tenantId || !clientId || !secret) return [];
    return [
      {
        name: DEFAULT_TENANT,
        tenantId,
        clientId,
        clientSecret: new Secret(secret),
        publisherId: given(c, 'AUDIT_PUBLISHER_ID') ?? tenantId,
        sources: defaultSources,
      },
    ];
  }
  return names.map((name) => {
    const tenantId = given(c, tenantSetting(name, 'TENANT_ID'))!;
    return {
      name,
      tenantId,
      clientId: given(c, tenantSetting(name, 'CLIENT_ID'))!,
      clientSecret: new Secret(given(c, tenantSetting(name, 'CLIENT_SECRET'))!),
      publisherId: given(c, tenantSetting(name, 'PUBLISHER_ID')) ?? tenantId,
      sources: parseSources(given(c, tenantSetting(name, 'SOURCES'))) ?? defaultSources,
    };
  });
}
