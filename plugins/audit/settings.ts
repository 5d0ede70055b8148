/**
 * The audit plugin's settings: its own slice of the environment, validated with zod when the
 * plugin is created. Every invalid value is reported at once, by name, and the hub does not
 * start. Missing auth settings with AUTH_ENABLED are not an
 * error but the "misconfigured" state the spec asks for (spec "Authentication" 6).
 */
import { z } from 'zod';
import { ADMIN_ROLE, SUBSCRIBER_ROLE } from '../../src/auth/user-service.js';
import { duration, flag, int, list, parseDuration, text } from '../../src/config/fields.js';
import { ConfigError, readsSettingsMatching, settingsProblems, sliceKeys } from '../../src/config/load.js';
import { Secret } from '../../src/config/secret.js';
import { isLoopbackHost } from '../../src/http/outbound-url.js';
import { cronSetting } from '../../src/kernel/scheduler.js';
import { MQTT_ROLES } from '../../src/mqtt/acl.js';
import {
  type AlertConfig,
  alertConfigFrom,
  alertSettingsShape,
  refineAlertSettings,
} from './alerts/settings.js';
import { type AiConfig, aiConfigFrom, aiSettingsShape, refineAiSettings } from './ask/settings.js';
import { checkOutboundSetting } from './outbound-setting.js';
import { refineSiemSettings, type SiemConfig, siemConfigFrom, siemSettingsShape } from './siem/settings.js';
import { isSourceName, SOURCE_NAMES, type SourceName } from './sources.js';
import { knownServiceKey, knownServiceNames } from './store/service-names.js';
import { type RoleTenants, roleTenantsSetting, unknownLimitedRoles } from './tenants/access.js';
import {
  refineTenantSettings,
  TENANT_SETTING_NAMES,
  type TenantConfig,
  tenantSettingsShape,
  tenantsFrom,
} from './tenants/settings.js';

export type RateLimitTier = 'fetch' | 'ask' | 'write' | 'default';

export interface RateLimitRule {
  limit: number;
  windowMs: number;
}

const rateLimit = text.transform((v, ctx): RateLimitRule => {
  const m = /^(\d{1,7})\/(\d+[smhd])$/.exec(v);
  const windowMs = m ? parseDuration(m[2]!) : undefined;
  if (!m || windowMs === undefined || Number(m[1]) < 1 || windowMs < 1000) {
    ctx.addIssue({ code: 'custom', message: 'expected requests per window like 300/1m' });
    return z.NEVER;
  }
  return { limit: Number(m[1]), windowMs };
});
/**
 * Roles that never reach audit data, whatever the settings: messaging subscribers (with billing,
 * paying strangers) and the machine roles the MQTT broker knows (src/mqtt/acl.ts), `admin` aside.
 */
export const NEVER_AUDIT_ROLES: readonly string[] = [
  SUBSCRIBER_ROLE,
  ...MQTT_ROLES.filter((role) => role !== ADMIN_ROLE),
];
const ROLE_LISTS = ['AUDIT_READER_ROLES', 'AUDIT_ADMIN_ROLES'] as const;
const BASE_URLS = ['AUDIT_LOGIN_BASE_URL', 'AUDIT_GRAPH_BASE_URL', 'AUDIT_MANAGEMENT_BASE_URL'] as const;
const CREDENTIALS = ['AUDIT_TENANT_ID', 'AUDIT_CLIENT_ID', 'AUDIT_CLIENT_SECRET'] as const;

/**
 * The audit plugin's settings slice (the hub's identity settings, AUTH_JWKS_URL, AUTH_ISSUER,
 * AUTH_AUDIENCE and AUTH_ROLES_CLAIM, are the hub's, not the plugin's). Checks that span
 * settings (base URLs against the allowlist, credentials together) run in the same pass, so
 * every problem is reported at once.
 */
export const auditSettings = z
  .object({
    AUDIT_TENANT_ID: text.min(1).optional(),
    AUDIT_CLIENT_ID: text.min(1).optional(),
    AUDIT_CLIENT_SECRET: z.string().min(1).optional(),
    AUDIT_ALLOWED_HOSTS: list.default([]),
    AUDIT_LOGIN_BASE_URL: text.default('https://login.microsoftonline.com'),
    AUDIT_GRAPH_BASE_URL: text.default('https://graph.microsoft.com'),
    AUDIT_MANAGEMENT_BASE_URL: text.default('https://manage.office.com'),
    /** Office 365 Management API `PublisherIdentifier`: our tenant GUID unless we publish for others. */
    AUDIT_PUBLISHER_ID: text.min(1).optional(),
    AUDIT_SOURCES: list
      .refine(
        (names) => names.every(isSourceName),
        `expected a comma-separated subset of ${SOURCE_NAMES.join(', ')}`,
      )
      .transform((names) => [...new Set(names)] as SourceName[])
      .default([...SOURCE_NAMES]),
    AUDIT_FETCH_CRON: cronSetting.default('*/10 * * * *'),
    AUDIT_FETCH_ON_START: flag.default(true),
    AUDIT_OVERLAP: duration.prefault('1h'),
    AUDIT_INITIAL_LOOKBACK: duration.prefault('7d'),
    AUDIT_MAX_RETRIES: int(0, 20).default(5),
    AUDIT_BACKOFF_BASE_MS: int(1, 600_000).default(1_000),
    AUDIT_BACKOFF_MAX_MS: int(1, 3_600_000).default(60_000),
    AUDIT_MAX_RETRY_AFTER: duration.prefault('5m'),
    AUDIT_REQUEST_TIMEOUT_MS: int(100, 300_000).default(30_000),
    RETENTION_DAYS: int(1, 36_500).default(90),
    AUDIT_MAINTENANCE_CRON: cronSetting.default('37 3 * * *'),
    AUDIT_TRAIL_RETENTION_DAYS: int(1, 36_500).default(365),
    AUDIT_TRAIL_REFUSALS_PER_HOUR: int(10, 100_000).default(200),
    AUTH_ENABLED: flag.default(false),
    AUTH_CLIENT_ID: text.min(1).optional(),
    AUDIT_ROLES_CLAIM: text.min(1).optional(),
    // Who reads the audit data, and who changes it (README "Who reads the audit data").
    AUDIT_READER_ROLES: list.default(['admin', 'auditor']),
    AUDIT_ADMIN_ROLES: list.default(['admin']),
    AUDIT_ALLOW_ANONYMOUS: flag.default(false),
    CORS_ORIGINS: list.default([]),
    WEBHOOK_CLIENT_SECRET: z.string().min(16, 'must be at least 16 characters').max(128).optional(),
    PRIVACY_SENSITIVE_OPERATIONS: list.default([]),
    PRIVACY_SERVICES: list.default([]),
    PRIVACY_SERVICE_ROLES: list.default([]),
    // Issue 29: roles limited to some tenants (tenants/access.ts).
    AUDIT_ROLE_TENANTS: roleTenantsSetting.optional(),
    RATE_LIMIT_FETCH: rateLimit.prefault('6/1h'),
    RATE_LIMIT_ASK: rateLimit.prefault('20/1m'),
    RATE_LIMIT_WRITE: rateLimit.prefault('120/1m'),
    RATE_LIMIT_DEFAULT: rateLimit.prefault('600/1m'),
    // Obsolete (issue 13: the counts moved to the cache store, which has no client table to
    // bound): any value is accepted and only warned about, so an old setting never stops the hub.
    RATE_LIMIT_MAX_CLIENTS: z.string().optional(),
    AUDIT_EXPORT_MAX_CONCURRENT: int(1, 16).default(2),
    AI_FEATURES_ENABLED: flag.default(false),
    ALERTS_ENABLED: flag.default(false),
    SIEM_ENABLED: flag.default(false),
    // Issue 14: private addresses for the Microsoft endpoints, the Graph subscription's public URL.
    AUDIT_ALLOW_PRIVATE_NETWORK: flag.default(false),
    WEBHOOK_PUBLIC_URL: text.optional(),
    CACHE_URL: text.optional(),
    // Issue 29: a folder of Sigma rules (sigma/), read at start-up and run as alert rules.
    SIGMA_RULES_DIR: text.min(1).optional(),
    // Issue 13: the LLM, its limits and MCP_ROLES (ask/settings.ts).
    ...aiSettingsShape,
    // Issue 14: alert rules' webhook and time zone (alerts/settings.ts).
    ...alertSettingsShape,
    // Issue 14: SIEM forwarding's endpoint, format and limits (siem/settings.ts).
    ...siemSettingsShape,
    // Issue 29: several tenants (tenants/settings.ts); their AUDIT_<NAME>_* names are read too.
    ...tenantSettingsShape,
  })
  .loose()
  .superRefine(
    (parsed, ctx) => {
      // Runs even when other settings are invalid (`when`), so every problem is reported at once:
      // any field here may be missing or of the wrong shape.
      const c = parsed as Partial<Record<string, unknown>>;
      const allowedHosts = Array.isArray(c.AUDIT_ALLOWED_HOSTS) ? (c.AUDIT_ALLOWED_HOSTS as string[]) : [];
      for (const name of BASE_URLS) checkOutboundSetting(c, name, allowedHosts, ctx);
      checkIssue14Settings(c, ctx);
      checkAccessSettings(c, ctx);
      checkRoleTenants(c, ctx);
      refineAiSettings(c, ctx);
      refineAlertSettings(c, ctx);
      refineSiemSettings(c, ctx);
      refineTenantSettings(c, ctx);
      const given = CREDENTIALS.filter((k) => c[k] !== undefined);
      if (given.length && given.length < CREDENTIALS.length && c.AUDIT_TENANTS === undefined) {
        const missing = CREDENTIALS.filter((k) => c[k] === undefined);
        ctx.addIssue({
          code: 'custom',
          path: [missing.join(', ')],
          message: 'required together with the other AUDIT_* credentials',
        });
      }
      const [base, max] = [c.AUDIT_BACKOFF_BASE_MS, c.AUDIT_BACKOFF_MAX_MS];
      if (typeof base === 'number' && typeof max === 'number' && max < base) {
        ctx.addIssue({
          code: 'custom',
          path: ['AUDIT_BACKOFF_MAX_MS'],
          message: 'must not be below AUDIT_BACKOFF_BASE_MS',
        });
      }
    },
    { when: () => true },
  );
// Issue 29: the per-tenant settings' names depend on AUDIT_TENANTS; the loader hands them over.
readsSettingsMatching(auditSettings, TENANT_SETTING_NAMES);

export type AuditSettings = z.output<typeof auditSettings>;

/**
 * Issue 23: the reader and admin role lists name at least one role and none of the hub's
 * subscriber or machine roles; PRIVACY_SERVICES names known services only (product names or
 * stored keys, as search takes them).
 */
function checkAccessSettings(c: Partial<Record<string, unknown>>, ctx: z.RefinementCtx): void {
  for (const name of ROLE_LISTS) {
    const roles = c[name];
    if (!Array.isArray(roles)) continue;
    if (!roles.length) {
      ctx.addIssue({
        code: 'custom',
        path: [name],
        message: 'must name at least one role (leave it unset for the default)',
      });
      continue;
    }
    const refused = (roles as string[]).filter((r) => NEVER_AUDIT_ROLES.includes(r.toLowerCase()));
    if (refused.length) {
      ctx.addIssue({
        code: 'custom',
        path: [name],
        message: `must not name ${refused.join(', ')}: messaging subscribers and machine accounts (${NEVER_AUDIT_ROLES.join(', ')}) never read audit data; give people a role of their own, such as auditor`,
      });
    }
  }
  const services = c.PRIVACY_SERVICES;
  if (Array.isArray(services)) {
    const unknown = (services as string[]).filter((s) => knownServiceKey(s) === undefined);
    if (unknown.length) {
      ctx.addIssue({
        code: 'custom',
        path: ['PRIVACY_SERVICES'],
        message: `unknown service ${unknown.map((s) => `"${s}"`).join(', ')}; known services: ${knownServiceNames()}`,
      });
    }
  }
}

/** Issue 29: AUDIT_ROLE_TENANTS limits reader and admin roles only. */
function checkRoleTenants(c: Partial<Record<string, unknown>>, ctx: z.RefinementCtx): void {
  const limits = c.AUDIT_ROLE_TENANTS;
  if (!(limits instanceof Map)) return;
  const roles = ROLE_LISTS.flatMap((name) => (Array.isArray(c[name]) ? (c[name] as string[]) : []));
  const unknown = unknownLimitedRoles(limits as RoleTenants, roles);
  if (unknown.length) {
    ctx.addIssue({
      code: 'custom',
      path: ['AUDIT_ROLE_TENANTS'],
      message: `names ${unknown.join(', ')}, not in AUDIT_READER_ROLES or AUDIT_ADMIN_ROLES; limit only the roles that read audit data`,
    });
  }
}

/**
 * Issue 23: anonymous audit access only on this machine. With AUTH_ENABLED off and the hub
 * listening beyond loopback (HTTP_HOST, default 0.0.0.0), anyone on the LAN could read and change
 * the audit data: the plugin refuses to start unless AUDIT_ALLOW_ANONYMOUS=true says so by name.
 * The one-line problem, or undefined when the start may go on.
 */
export function anonymousAccessProblem(config: AuditConfig, listenHost: string): string | undefined {
  if (config.auth.state !== 'off' || config.auth.allowAnonymous || isLoopbackHost(listenHost))
    return undefined;
  return `AUTH_ENABLED: the audit plugin will not serve audit data without sign-in to the network (HTTP_HOST is ${listenHost}); set AUTH_ENABLED=true with an identity provider, or HTTP_HOST=127.0.0.1 for this machine only, or AUDIT_ALLOW_ANONYMOUS=true to let anyone who reaches the hub read and change the audit data`;
}

/** Issue 14's cross-setting checks: WEBHOOK_PUBLIC_URL is https (or loopback) and needs the client state. */
function checkIssue14Settings(c: Partial<Record<string, unknown>>, ctx: z.RefinementCtx): void {
  checkOutboundSetting(c, 'WEBHOOK_PUBLIC_URL', [], ctx);
  if (typeof c.WEBHOOK_PUBLIC_URL === 'string' && c.WEBHOOK_CLIENT_SECRET === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['WEBHOOK_CLIENT_SECRET'],
      message: 'required with WEBHOOK_PUBLIC_URL (the subscription’s clientState)',
    });
  }
}

export const AUDIT_ENV_KEYS = Object.keys(auditSettings.shape);

export interface AuthSettings {
  enabled: boolean;
  /** `off`, `on`, or `misconfigured` (enabled but incomplete: every request needing a token is refused). */
  state: 'off' | 'on' | 'misconfigured';
  /** Names of the missing settings when misconfigured. */
  missing: string[];
  jwksUrl?: URL;
  issuer?: string;
  audience?: string;
  clientId?: string;
  rolesClaim: string;
  /** AUDIT_READER_ROLES: who reads the audit data (admins read it too). Never empty. */
  readerRoles: string[];
  /** AUDIT_ADMIN_ROLES: who changes it (tags, comments, rules), fetches, reads the trail. Never empty. */
  adminRoles: string[];
  /** AUDIT_ALLOW_ANONYMOUS: auth off on a non-loopback HTTP_HOST, chosen by name (a warning at every start). */
  allowAnonymous: boolean;
}

export interface AuditConfig {
  /** Issue 29: the tenants collected (AUDIT_TENANTS, or the one `default`); empty: collection off. */
  tenants: TenantConfig[];
  credentials?: { tenantId: string; clientId: string; clientSecret: Secret };
  publisherId?: string;
  loginBaseUrl: URL;
  graphBaseUrl: URL;
  managementBaseUrl: URL;
  allowedHosts: string[];
  sources: SourceName[];
  fetchCron: string;
  fetchOnStart: boolean;
  overlapMs: number;
  initialLookbackMs: number;
  maxRetries: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  maxRetryAfterMs: number;
  requestTimeoutMs: number;
  retentionDays: number;
  maintenanceCron: string;
  trailRetentionDays: number;
  /** New refusal rows (401, 403, 429) per hour in the trail before they go to overflow rows. */
  trailRefusalsPerHour: number;
  auth: AuthSettings;
  corsOrigins: string[];
  webhookClientSecret?: Secret;
  privacy: {
    sensitiveOperations: string[];
    services: string[];
    roles: string[];
    /** Issue 29: AUDIT_ROLE_TENANTS, and the reader and admin roles (the audit roles it limits). */
    roleTenants: RoleTenants;
    auditRoles: string[];
  };
  rateLimits: Record<RateLimitTier, RateLimitRule>;
  /** Settings that no longer do anything but are set (warned about at start). */
  obsoleteSettings: string[];
  exportMaxConcurrent: number;
  features: { aiFeaturesEnabled: boolean; alertsEnabled: boolean; siemEnabled: boolean };
  /** Issue 14: private addresses for the Microsoft endpoints; the Graph subscription's public URL. */
  allowPrivateNetwork: boolean;
  webhookPublicUrl?: URL;
  cacheUrl?: string;
  /** Issue 29: the folder of Sigma rules (read at start-up; a change needs a restart). */
  sigmaRulesDir?: string;
  /** Issue 13: the LLM behind asks and explanations, LLM_MAX_EVENTS, MCP_ROLES. */
  ai: AiConfig;
  /** Issue 14: the alert rules' time zone and webhook (evaluation runs with features.alertsEnabled). */
  alerts: AlertConfig;
  /** Issue 14: SIEM forwarding, present exactly when SIEM_ENABLED=true. */
  siem?: SiemConfig;
}

export class AuditConfigError extends ConfigError {}

function blank(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of sliceKeys(auditSettings, Object.keys(env))) {
    const value = env[key];
    if (value !== undefined && value.trim() !== '') out[key] = value;
  }
  return out;
}

/** The hub's external identity provider, when configured (the audit routes' sign-in). */
export interface IdentityProvider {
  jwksUrl: string;
  issuer: string;
  audience: string;
  /** AUTH_ROLES_CLAIM: where the provider's tokens carry roles. */
  rolesClaim: string;
}

/** Parses the audit slice from an environment (tests, and the CLI's checks); throws AuditConfigError. */
export function loadAuditConfig(
  env: Readonly<Record<string, string | undefined>>,
  provider?: IdentityProvider,
): AuditConfig {
  const input = blank(env);
  const result = auditSettings.safeParse(input);
  if (!result.success) throw new AuditConfigError(settingsProblems(result.error, input));
  return auditConfigFrom(result.data, provider);
}

/**
 * The plugin's working config from its parsed settings. AUTH_ENABLED with no identity provider
 * on the hub is the spec's "misconfigured" state (a warning, 503 for token routes), not an error.
 */
export function auditConfigFrom(
  c: AuditSettings,
  provider?: IdentityProvider,
  providerMissing?: readonly string[],
): AuditConfig {
  const missing =
    c.AUTH_ENABLED && !provider
      ? providerMissing?.length
        ? [...providerMissing]
        : ['AUTH_JWKS_URL', 'AUTH_ISSUER', 'AUTH_AUDIENCE']
      : [];
  const url = (value: string) => {
    const u = new URL(value);
    u.pathname = u.pathname.replace(/\/+$/, '');
    return u;
  };
  return {
    tenants: tenantsFrom(c, c.AUDIT_SOURCES),
    ...(c.AUDIT_TENANT_ID && c.AUDIT_CLIENT_ID && c.AUDIT_CLIENT_SECRET
      ? {
          credentials: {
            tenantId: c.AUDIT_TENANT_ID,
            clientId: c.AUDIT_CLIENT_ID,
            clientSecret: new Secret(c.AUDIT_CLIENT_SECRET),
          },
        }
      : {}),
    ...(c.AUDIT_PUBLISHER_ID || c.AUDIT_TENANT_ID
      ? { publisherId: c.AUDIT_PUBLISHER_ID ?? c.AUDIT_TENANT_ID }
      : {}),
    loginBaseUrl: url(c.AUDIT_LOGIN_BASE_URL),
    graphBaseUrl: url(c.AUDIT_GRAPH_BASE_URL),
    managementBaseUrl: url(c.AUDIT_MANAGEMENT_BASE_URL),
    allowedHosts: c.AUDIT_ALLOWED_HOSTS,
    sources: c.AUDIT_SOURCES,
    fetchCron: c.AUDIT_FETCH_CRON,
    fetchOnStart: c.AUDIT_FETCH_ON_START,
    overlapMs: c.AUDIT_OVERLAP,
    initialLookbackMs: c.AUDIT_INITIAL_LOOKBACK,
    maxRetries: c.AUDIT_MAX_RETRIES,
    backoffBaseMs: c.AUDIT_BACKOFF_BASE_MS,
    backoffMaxMs: c.AUDIT_BACKOFF_MAX_MS,
    maxRetryAfterMs: c.AUDIT_MAX_RETRY_AFTER,
    requestTimeoutMs: c.AUDIT_REQUEST_TIMEOUT_MS,
    retentionDays: c.RETENTION_DAYS,
    maintenanceCron: c.AUDIT_MAINTENANCE_CRON,
    trailRetentionDays: c.AUDIT_TRAIL_RETENTION_DAYS,
    trailRefusalsPerHour: c.AUDIT_TRAIL_REFUSALS_PER_HOUR,
    auth: {
      enabled: c.AUTH_ENABLED,
      state: !c.AUTH_ENABLED ? 'off' : missing.length ? 'misconfigured' : 'on',
      missing: [...missing],
      ...(provider
        ? { jwksUrl: new URL(provider.jwksUrl), issuer: provider.issuer, audience: provider.audience }
        : {}),
      ...(c.AUTH_CLIENT_ID ? { clientId: c.AUTH_CLIENT_ID } : {}),
      rolesClaim: c.AUDIT_ROLES_CLAIM ?? provider?.rolesClaim ?? 'roles',
      readerRoles: c.AUDIT_READER_ROLES,
      adminRoles: c.AUDIT_ADMIN_ROLES,
      allowAnonymous: c.AUDIT_ALLOW_ANONYMOUS,
    },
    corsOrigins: c.CORS_ORIGINS,
    ...(c.WEBHOOK_CLIENT_SECRET ? { webhookClientSecret: new Secret(c.WEBHOOK_CLIENT_SECRET) } : {}),
    privacy: {
      sensitiveOperations: c.PRIVACY_SENSITIVE_OPERATIONS,
      // Stored keys (`device_management` for `Intune`): what events carry and every read path compares.
      services: [...new Set(c.PRIVACY_SERVICES.map((s) => knownServiceKey(s) ?? s))],
      roles: c.PRIVACY_SERVICE_ROLES,
      roleTenants: c.AUDIT_ROLE_TENANTS ?? new Map(),
      auditRoles: [...new Set([...c.AUDIT_READER_ROLES, ...c.AUDIT_ADMIN_ROLES])],
    },
    rateLimits: {
      fetch: c.RATE_LIMIT_FETCH,
      ask: c.RATE_LIMIT_ASK,
      write: c.RATE_LIMIT_WRITE,
      default: c.RATE_LIMIT_DEFAULT,
    },
    obsoleteSettings: c.RATE_LIMIT_MAX_CLIENTS !== undefined ? ['RATE_LIMIT_MAX_CLIENTS'] : [],
    exportMaxConcurrent: c.AUDIT_EXPORT_MAX_CONCURRENT,
    features: {
      aiFeaturesEnabled: c.AI_FEATURES_ENABLED,
      alertsEnabled: c.ALERTS_ENABLED,
      siemEnabled: c.SIEM_ENABLED,
    },
    ...(c.CACHE_URL ? { cacheUrl: c.CACHE_URL } : {}),
    ...(c.SIGMA_RULES_DIR ? { sigmaRulesDir: c.SIGMA_RULES_DIR } : {}),
    ai: aiConfigFrom(c),
    alerts: alertConfigFrom(c),
    ...(siemConfigFrom(c) ? { siem: siemConfigFrom(c)! } : {}),
    allowPrivateNetwork: c.AUDIT_ALLOW_PRIVATE_NETWORK,
    ...(c.WEBHOOK_PUBLIC_URL ? { webhookPublicUrl: url(c.WEBHOOK_PUBLIC_URL) } : {}),
  };
}
