/** The hub's role refusals in words (kept apart from audit-api.ts, which needs a browser to load). */
import { t } from '../i18n/index.js';
import type { ApiError } from '../lib/problem.js';

/**
 * A 403 from the hub's role check (issue 23): it names the access (`read`: AUDIT_READER_ROLES,
 * `admin`: AUDIT_ADMIN_ROLES) and the roles that would grant it. Undefined for other 403s (a
 * privacy-gated event says its own reason).
 */
export function accessWords(error: ApiError): string | undefined {
  const members = error.extras.members ?? {};
  const access = members.access;
  if (access !== 'read' && access !== 'admin') return undefined;
  const roles = Array.isArray(members.roles)
    ? members.roles.filter((r): r is string => typeof r === 'string')
    : [];
  const preferred = access === 'read' ? 'auditor' : 'admin';
  const role = roles.includes(preferred) ? preferred : roles.length === 1 ? roles[0] : undefined;
  const ask = role
    ? t('audit.access.askRole', { role })
    : roles.length
      ? t('audit.access.askRoles', { roles: roles.join(', ') })
      : t('audit.access.ask');
  return t(access === 'read' ? 'audit.access.noRead' : 'audit.access.noAdmin', { ask });
}
