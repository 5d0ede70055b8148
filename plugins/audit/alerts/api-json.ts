/**
 * Rules and alerts as the API shows them: the stored rows written in the shapes of schemas.ts.
 */
import type { AlertRow, Rule } from './alert-repository.js';
import { conditionJson, formatDuration } from './condition.js';
import type { ApiAlert, ApiRule } from './schemas.js';

const iso = (ms: number) => new Date(ms).toISOString();

export function toApiRule(rule: Rule): ApiRule {
  return {
    id: String(rule.id),
    name: rule.name,
    description: rule.description,
    severity: rule.severity as ApiRule['severity'],
    enabled: rule.enabled,
    condition: conditionJson(rule.condition),
    created_at: iso(rule.createdAt),
    updated_at: iso(rule.updatedAt),
    created_by: rule.createdBy,
    updated_by: rule.updatedBy,
    ...(rule.sigma ? { sigma: rule.sigma } : {}),
  };
}

export function toApiAlert(row: AlertRow): ApiAlert {
  return {
    id: String(row.id),
    rule: { id: String(row.rule_id), name: row.rule_name },
    severity: row.severity as ApiAlert['severity'],
    fired_at: iso(row.fired_at),
    key: row.alert_key,
    match_count: row.match_count,
    window: formatDuration(row.window_ms),
    // Alerts stored before tenants existed are the default tenant's.
    event: { tenant: 'default', ...(JSON.parse(row.detail) as Omit<ApiAlert['event'], 'tenant'>) },
    delivery: row.delivery as ApiAlert['delivery'],
  };
}
