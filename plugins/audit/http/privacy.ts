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
 */
import type { PrivacyScope } from '../store/event-query.js';
import { serviceKey } from '../store/service-names.js';
import type { Caller } from './context.js';

export class PrivacyPolicy {
  private readonly operations: Set<string>;
  private readonly services: Set<string>;
  private readonly scope: PrivacyScope;

  constructor(
    private readonly settings: { sensitiveOperations: string[]; services: string[]; roles: string[] },
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
    if (!this.active || this.privileged(caller)) return undefined;
    return this.scope;
  }

  allows(caller: Caller, event: { service: string; operation: string }): boolean {
    if (!this.active || this.privileged(caller)) return true;
    return (
      !this.services.has(event.service.toLowerCase()) && !this.operations.has(event.operation.toLowerCase())
    );
  }

  private privileged(caller: Caller): boolean {
    return caller.roles.some((r) => this.settings.roles.includes(r));
  }
}
