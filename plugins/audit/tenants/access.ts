/**
 * Issue 29, several tenants: AUDIT_ROLE_TENANTS limits roles to some tenants, e.g.
 * `contoso-auditors:contoso,msp-tier1:contoso+fabrikam`. Each entry is a role (one of
 * AUDIT_READER_ROLES or AUDIT_ADMIN_ROLES), a colon, and the tenants it sees joined by `+`.
 *
 * A caller holding any audit role that is not listed sees every tenant; a caller whose audit
 * roles are all listed sees only the union of their roles' tenants (PrivacyPolicy.scopeFor).
 */
import { z } from 'zod';
import { list } from '../../../src/config/fields.js';

/** The tenant's short name, as AUDIT_TENANTS names it. */
export const TENANT_NAME = /^[a-z][a-z0-9-]{0,31}$/;

/** Role → the tenants it sees (names, each once). */
export type RoleTenants = ReadonlyMap<string, readonly string[]>;

const ENTRY_WORDS = 'expected role:tenant entries like contoso-auditors:contoso,msp-tier1:contoso+fabrikam';

export const roleTenantsSetting = list.transform((entries, ctx): RoleTenants => {
  const out = new Map<string, string[]>();
  const bad: string[] = [];
  for (const entry of entries) {
    const at = entry.indexOf(':');
    const role = at > 0 ? entry.slice(0, at).trim() : '';
    const tenants =
      at > 0
        ? entry
            .slice(at + 1)
            .split('+')
            .map((t) => t.trim())
        : [];
    if (!role || !tenants.length || tenants.some((t) => !TENANT_NAME.test(t))) {
      bad.push(`"${entry}"`);
      continue;
    }
    if (out.has(role)) {
      bad.push(`"${entry}" (${role} is listed twice)`);
      continue;
    }
    out.set(role, [...new Set(tenants)]);
  }
  if (bad.length) {
    ctx.addIssue({
      code: 'custom',
      message: `${ENTRY_WORDS} (tenant names are lower-case letters, digits and "-"); bad: ${bad.join(', ')}`,
    });
    return z.NEVER;
  }
  return out;
});

/** The roles of AUDIT_ROLE_TENANTS that are neither reader nor admin roles (a start-up error). */
export function unknownLimitedRoles(limits: RoleTenants, auditRoles: readonly string[]): string[] {
  return [...limits.keys()].filter((role) => !auditRoles.includes(role));
}

/**
 * The tenants this caller may see: undefined for all of them. Only the caller's audit roles
 * count; one that is not limited lifts every limit. A caller with no audit role at all (the
 * anonymous caller with AUTH_ENABLED off) is not limited: the route's own role check decides
 * whether they read anything.
 */
export function visibleTenants(
  limits: RoleTenants,
  auditRoles: readonly string[],
  callerRoles: readonly string[],
): string[] | undefined {
  if (!limits.size) return undefined;
  const held = callerRoles.filter((r) => auditRoles.includes(r));
  if (!held.length || held.some((r) => !limits.has(r))) return undefined;
  return [...new Set(held.flatMap((r) => limits.get(r)!))].sort();
}
