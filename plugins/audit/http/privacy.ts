/**
 * Privacy gating (spec "Privacy gating"): operations in PRIVACY_SENSITIVE_OPERATIONS (across all
 * services) and whole services in PRIVACY_SERVICES are visible only to callers holding a role in
 * PRIVACY_SERVICE_ROLES. Every read path asks this policy: search, single event, filter options,
 * export, ask, explain and MCP. Operations compare case-insensitively; services go through the
 * plugin's one service-name mapping (store/service-names.ts), so `Intune` and `Entra ID` hide
 * the stored `device_management` and `directory` (issue 23).
 *
 * With AUTH_ENABLED off every caller is anonymous and holds no role, so gated events stay
 * hidden: the gate fails closed.
 *
 * Issue 29: AUDIT_ROLE_TENANTS limits roles to some tenants (tenants/access.ts). The scope then
 * names the tenants the caller sees, and every read path leaves the others out; a single event of
 * a hidden tenant is a 404 (`seesTenant`), as if it did not exist.
 */
import type { PrivacyScope } from '../store/event-query.js';
import { serviceKey } from '../store/service-names.js';
import { type RoleTenants, visibleTenants } from '../tenants/access.js';
import type { Caller } from './context.js';

export class PrivacyPolicy {
  private readonly operations: Set<string>;
  private readonly services: Set<string>;
  private readonly scope: PrivacyScope;

  constructor(
    private readonly settings: {
      sensitiveOperations: string[];
      services: string[];
      roles: string[];
      /** AUDIT_ROLE_TENANTS, and the reader and admin roles it limits. */
      roleTenants?: RoleTenants;
      auditRoles?: readonly string[];
    },
  ) {
    this.operations = new Set(settings.sensitiveOperations.map((o) => o.toLowerCase()));
    this.services = new Set(settings.services.map(serviceKey));
    this.scope = { hiddenOperations: settings.sensitiveOperations, hiddenServices: [...this.services] };
  }

  get active(): boolean {
    return this.operations.size > 0 || this.services.size > 0;
  }

  /** What this caller may not see; undefined when nothing is hidden from them. */
  scopeFor(caller: Caller): PrivacyScope | undefined {
    const tenants = this.tenantsOf(caller);
    const gated = this.active && !this.privileged(caller);
    if (!gated && !tenants) return undefined;
    const scope: PrivacyScope = gated ? this.scope : { hiddenOperations: [], hiddenServices: [] };
    return tenants ? { ...scope, tenants } : scope;
  }

  /** The tenants this caller may see (AUDIT_ROLE_TENANTS); undefined: every tenant. */
  tenantsOf(caller: Caller): string[] | undefined {
    const limits = this.settings.roleTenants;
    if (!limits?.size) return undefined;
    return visibleTenants(limits, this.settings.auditRoles ?? [], caller.roles);
  }

  /** Whether the caller may see events of this tenant (a hidden tenant's event is a 404). */
  seesTenant(caller: Caller, tenant: string): boolean {
    const tenants = this.tenantsOf(caller);
    return !tenants || tenants.includes(tenant);
  }

  /** Whether the caller may see this event: its tenant, when given, and its service and operation. */
  allows(caller: Caller, event: { service: string; operation: string; tenant?: string }): boolean {
    if (event.tenant !== undefined && !this.seesTenant(caller, event.tenant)) return false;
    if (!this.active || this.privileged(caller)) return true;
    return (
      !this.services.has(event.service.toLowerCase()) && !this.operations.has(event.operation.toLowerCase())
    );
  }

  private privileged(caller: Caller): boolean {
    return caller.roles.some((r) => this.settings.roles.includes(r));
  }
}
