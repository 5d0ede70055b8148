/**
 * Settings of the upstream role (`meshhub upstream`), read from the environment and reported all
 * at once like the hub's (src/config/load.ts): every invalid value by name, then exit non-zero.
 *
 * Names the hub also has mean the same here (HTTP_HOST, HTTP_PORT, DATA_DIR, AUTH_*, WEB_ROOT,
 * MAP_TILES, LOG_LEVEL, MESSAGE_RATE_*); the field types are the hub's own (src/config/fields.ts).
 * UPSTREAM_DATABASE_URL carries a password: it is held as a Secret and never echoed, not even in
 * an error.
 */
import { z } from 'zod';
import { externalTrustedIssuer } from '../../src/auth/hub-identity.js';
import { authSettings } from '../../src/auth/settings.js';
import { type BillingSettings, billingSettings } from '../../src/billing/settings.js';
import { flag, int, list, port } from '../../src/config/fields.js';
import { ConfigError, settingsProblems } from '../../src/config/load.js';
import { Secret } from '../../src/config/secret.js';
import { messagingSettings } from '../../src/messaging/settings.js';
import { webUiSettings } from '../../src/ui-server/settings.js';

const DATABASE_URL_HINT = 'expected a PostgreSQL URL like postgres://user:password@host:5432/database';

/** A `postgres://` / `postgresql://` URL, kept as a Secret (it usually holds the password). */
const databaseUrl = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : DATABASE_URL_HINT) })
  .transform((value, ctx) => {
    let url: URL | undefined;
    try {
      url = new URL(value);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:')) {
      ctx.addIssue({ code: 'custom', message: DATABASE_URL_HINT });
      return z.NEVER;
    }
    return new Secret(value);
  });

/** Only what the CLI's database commands need (`migrate`, `site …`, `user …`, `subscription …`). */
export const upstreamDatabaseSettings = z.object({
  /** The PostgreSQL every upstream process shares (required). */
  UPSTREAM_DATABASE_URL: databaseUrl,
  /** Connections this process keeps open to PostgreSQL at most. */
  UPSTREAM_DB_POOL_MAX: int(1, 1000).default(10),
});

export const upstreamSettings = z.object({
  ...upstreamDatabaseSettings.shape,
  /**
   * Where this upstream keeps its token signing key (jwt-signing-key.json), which signs the
   * tokens of its local users (POST /api/v1/auth/token). Several upstream processes behind a
   * load balancer MUST share this key file (a shared volume, or the same file deployed to each),
   * or a token issued by one process is refused by the others. Never point it at a hub's
   * DATA_DIR: the hub's key is that site's identity towards the upstream.
   */
  DATA_DIR: z.string().min(1).default('./upstream-data'),
  HTTP_HOST: z.string().min(1).default('127.0.0.1'),
  HTTP_PORT: port.default(8080),
  /**
   * Behind a load balancer or reverse proxy: take the client address for login throttling from
   * the last X-Forwarded-For entry (what the proxy saw) instead of the TCP peer (the proxy).
   * Only set it when a proxy you run always sets that header.
   */
  HTTP_TRUST_PROXY: flag.prefault('false'),
  /**
   * History answers follow the batches any upstream process applies through one LISTEN
   * connection (sync/upstream/history-changes.ts): a cached year of history is answered with no
   * PostgreSQL query, and may miss a batch whose notification is still on its way (milliseconds;
   * never more than 3 s). false: every history request asks PostgreSQL once and is never older
   * than the request.
   */
  UPSTREAM_HISTORY_LISTEN: flag.prefault('true'),
  /**
   * The read API (`/api/v1/nodes`, `/sites`, `/weather/*`, `/live`) needs a signed-in user's
   * bearer token by default: node positions are those of people in the field. true opens it to
   * anonymous callers, who get positions rounded to 0.01° (read-access.ts); signed-in callers
   * always get them exact. README "The upstream's reads".
   */
  UPSTREAM_PUBLIC_READ: flag.prefault('false'),
  /**
   * The bearer secret Prometheus sends to `/metrics` (its `authorization` setting). Unset:
   * `/metrics` refuses every caller. At least 32 characters; never echoed.
   */
  UPSTREAM_METRICS_TOKEN: z
    .string()
    .min(32, 'must be at least 32 characters (e.g. openssl rand -hex 32)')
    .transform((value) => new Secret(value))
    .optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** An external identity provider, as on the hub (all three together). */
  AUTH_JWKS_URL: z.string().optional(),
  AUTH_ISSUER: z.string().optional(),
  AUTH_AUDIENCE: z.string().optional(),
  AUTH_ROLES_CLAIM: z.string().min(1).default('roles'),
  /** The provider's and the sites' JWKS URLs may resolve to LAN addresses (README "Outbound connections"). */
  AUTH_JWKS_ALLOW_PRIVATE_NETWORK: flag.prefault('false'),
  ...authSettings.shape,
  ...webUiSettings.shape,
  MESSAGE_RATE_PER_SUBSCRIBER: messagingSettings.shape.MESSAGE_RATE_PER_SUBSCRIBER,
  MESSAGE_RATE_PER_NODE: messagingSettings.shape.MESSAGE_RATE_PER_NODE,
  /**
   * Plugins this upstream runs, as on a hub: `billing` (docs/sync.md "Billing on the upstream"),
   * with the hub's BTCPAY_* and BILLING_* settings, checked with the rest.
   */
  PLUGINS: list.default([]),
});

/** The plugins an upstream can run. */
export const UPSTREAM_PLUGINS = ['billing'] as const;

export type UpstreamSettings = z.output<typeof upstreamSettings> & {
  /** Set when PLUGINS names billing: the billing plugin's settings, parsed as on a hub. */
  billing?: BillingSettings;
};
export type UpstreamDatabaseSettings = z.output<typeof upstreamDatabaseSettings>;

/** Settings whose value is never shown in a problem (it may hold a password). */
const NEVER_ECHOED = new Set(['UPSTREAM_DATABASE_URL', 'UPSTREAM_METRICS_TOKEN']);

function parseSlice<S extends z.ZodObject<z.ZodRawShape>>(
  schema: S,
  env: Readonly<Record<string, string | undefined>>,
  problems: string[],
): z.output<S> | undefined {
  const input: Record<string, unknown> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = env[key];
    // Empty values count as unset, as on the hub.
    if (value !== undefined && value.trim() !== '') input[key] = value;
  }
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const shown = Object.fromEntries(Object.entries(input).filter(([key]) => !NEVER_ECHOED.has(key)));
  problems.push(...settingsProblems(result.error, shown));
  return undefined;
}

/**
 * The upstream's settings from the environment; throws ConfigError listing every problem,
 * including an incomplete identity provider (AUTH_JWKS_URL without AUTH_ISSUER, …).
 */
export function loadUpstreamSettings(env: Readonly<Record<string, string | undefined>>): UpstreamSettings {
  const problems: string[] = [];
  const settings: UpstreamSettings | undefined = parseSlice(upstreamSettings, env, problems);
  // From the environment itself, so billing's problems are reported even when others stop the parse.
  const plugins = settings?.PLUGINS ?? upstreamSettings.shape.PLUGINS.parse(env.PLUGINS ?? '');
  const unknown = plugins.filter((p) => !(UPSTREAM_PLUGINS as readonly string[]).includes(p));
  if (unknown.length)
    problems.push(
      `PLUGINS: ${unknown.map((p) => `"${p}"`).join(', ')} does not run on the upstream (it runs: ${UPSTREAM_PLUGINS.join(', ')})`,
    );
  if (plugins.includes('billing')) {
    const billing = parseSlice(billingSettings, env, problems);
    if (settings && billing) settings.billing = billing;
  }
  try {
    externalTrustedIssuer({
      jwksUrl: env.AUTH_JWKS_URL?.trim() || undefined,
      issuer: env.AUTH_ISSUER?.trim() || undefined,
      audience: env.AUTH_AUDIENCE?.trim() || undefined,
    });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(...error.problems);
  }
  if (problems.length || !settings) throw new ConfigError(problems);
  return settings;
}

/** UPSTREAM_DATABASE_URL and the pool size only (the CLI's database commands). */
export function loadUpstreamDatabaseSettings(
  env: Readonly<Record<string, string | undefined>>,
): UpstreamDatabaseSettings {
  const problems: string[] = [];
  const settings = parseSlice(upstreamDatabaseSettings, env, problems);
  if (problems.length || !settings) throw new ConfigError(problems);
  return settings;
}
