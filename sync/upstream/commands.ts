/**
 * `meshhub upstream …`: run the upstream, migrate its database, register and revoke sites,
 * manage its users and grant subscriptions. The database commands need only
 * UPSTREAM_DATABASE_URL and work while upstream processes run (they share PostgreSQL).
 * The words are the hub CLI's (`--roles`, `--password-stdin`, `--nodes`, `--expires`), the hub's
 * old spellings accepted with a deprecation line. Passwords come from stdin (`--password-stdin`)
 * or MESHHUB_PASSWORD, never from arguments (they would show in `ps` and the shell history); stdin
 * without the flag, the upstream's old way, still works with a deprecation line. Exit codes as the hub's CLI: 0 done, 1 refused (no such site or user,
 * exists already, database unreachable, invalid settings), 2 usage errors.
 */

import { readFileSync } from 'node:fs';
import type { JSONWebKeySet } from 'jose';
import type pg from 'pg';
import {
  one,
  PASSWORD_OPTIONS,
  ROLES_OPTIONS,
  readPassword,
  rolesFrom,
} from '../../src/auth/cli-commands.js';
import { EXTERNAL_PRINCIPAL_PREFIX } from '../../src/auth/hub-identity.js';
import { ConfigError } from '../../src/config/load.js';
import {
  type CliCommand,
  type CliIo,
  parseCommand,
  pickSubcommand,
  reportCliError,
  UsageError,
} from '../../src/kernel/cli-args.js';
import {
  EXPIRES_OPTIONS,
  expiresFrom,
  NODES_OPTIONS,
  nodesFrom,
} from '../../src/messaging/subscription-commands.js';
import { siteIdSchema } from '../protocol.js';
import { InvalidUserError, UpstreamUserService, UserExistsError } from './auth/user-service.js';
import { grantOrExtend } from './billing/grants.js';
import { migrateUpstream } from './db/migrate.js';
import { ensurePartitions } from './db/partitions.js';
import { isTransientDatabaseError, openPool, withTransaction } from './db/pool.js';
import { runUpstreamServer } from './main.js';
import { loadUpstreamDatabaseSettings } from './settings.js';
import { SiteRegistry, SiteRegistryError, type SiteRow } from './sites.js';

export interface UpstreamCommandContext extends CliIo {
  env: Readonly<Record<string, string | undefined>>;
  /** Where `user add` / `user passwd` read the password (--password-stdin). */
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
}

const SERVE = {
  name: 'meshhub upstream',
  help: `  meshhub upstream [serve]
                        Run the upstream: migrate, then serve the sync, read, messaging and auth
                        APIs and the web UI on HTTP_HOST:HTTP_PORT.
`,
  options: {},
  positionals: false,
} satisfies CliCommand;

const MIGRATE = {
  name: 'meshhub upstream migrate',
  help: `  meshhub upstream migrate
                        Apply the PostgreSQL schema migrations and exit.
`,
  options: {},
  positionals: false,
} satisfies CliCommand;

const SITE_COMMANDS = {
  add: {
    name: 'meshhub upstream site add',
    help: `  meshhub upstream site add <site_id> (--public-key <jwks-file> | --jwks-url <url>) [--name <name>] [--replace]
                        Register a site and the public key its requests are signed with (the
                        site's \`meshhub sync key\`, or its /.well-known/jwks.json). --replace
                        replaces a registered site's keys (and lifts its revocation).
`,
    options: {
      'public-key': { type: 'string' },
      'jwks-url': { type: 'string' },
      name: { type: 'string' },
      replace: { type: 'boolean' },
    },
  },
  list: {
    name: 'meshhub upstream site list',
    help: '  meshhub upstream site list\n',
    options: {},
    positionals: false,
  },
  revoke: {
    name: 'meshhub upstream site revoke',
    help: `  meshhub upstream site revoke <site_id>
                        Refuse the site's requests from now on (its data stays).
`,
    options: {},
  },
} satisfies Record<string, CliCommand>;

const USER_COMMANDS = {
  add: {
    name: 'meshhub upstream user add',
    help: `  meshhub upstream user add <name> [--roles ROLE,ROLE] --password-stdin
                        Create a user (roles: subscriber by default, admin, ...); the password
                        comes from stdin (or MESHHUB_PASSWORD).
`,
    options: { ...ROLES_OPTIONS, ...PASSWORD_OPTIONS },
  },
  list: {
    name: 'meshhub upstream user list',
    help: '  meshhub upstream user list\n',
    options: {},
    positionals: false,
  },
  passwd: {
    name: 'meshhub upstream user passwd',
    help: '  meshhub upstream user passwd <name> --password-stdin\n',
    options: PASSWORD_OPTIONS,
  },
  revoke: {
    name: 'meshhub upstream user revoke',
    help: `  meshhub upstream user revoke <name>
                        End every token and sign-in of the user now (they sign in again).
`,
    options: {},
  },
  disable: {
    name: 'meshhub upstream user disable',
    help: `  meshhub upstream user disable <name>
                        Refuse the user's logins and revoke their subscriptions at every site.
`,
    options: {},
  },
  enable: {
    name: 'meshhub upstream user enable',
    help: '  meshhub upstream user enable <name>\n',
    options: {},
  },
} satisfies Record<string, CliCommand>;

const SUBSCRIPTION_GRANT = {
  name: 'meshhub upstream subscription grant',
  help: `  meshhub upstream subscription grant <user> --nodes all|!a1b2c3d4,... [--expires DATE]
                        Let a user (or idp:<sub>) text every node (all) or the nodes named, until
                        DATE (2026-12-31, or an ISO date-time); the sites that heard those nodes
                        (every site for all) are told.
`,
  options: { ...NODES_OPTIONS, ...EXPIRES_OPTIONS },
} satisfies CliCommand;

const helpOf = (commands: Record<string, CliCommand>) =>
  Object.values(commands)
    .map((c) => c.help)
    .join('');

const SITE_GROUP = {
  name: 'meshhub upstream site',
  help: helpOf(SITE_COMMANDS),
  subcommands: Object.keys(SITE_COMMANDS) as Array<keyof typeof SITE_COMMANDS>,
};
const USER_GROUP = {
  name: 'meshhub upstream user',
  help: helpOf(USER_COMMANDS),
  subcommands: Object.keys(USER_COMMANDS) as Array<keyof typeof USER_COMMANDS>,
};
const SUBSCRIPTION_GROUP = {
  name: 'meshhub upstream subscription',
  help: SUBSCRIPTION_GRANT.help,
  subcommands: ['grant'] as const,
};
const PLAN_LINE = `  meshhub upstream plan add|list|retire ...
                        Billing plans on the upstream (PLUGINS=billing there), as meshhub plan.
`;
const UPSTREAM_GROUP = {
  name: 'meshhub upstream',
  help: [SERVE.help, MIGRATE.help, SITE_GROUP.help, USER_GROUP.help, SUBSCRIPTION_GROUP.help, PLAN_LINE].join(
    '',
  ),
  subcommands: ['serve', 'migrate', 'site', 'user', 'subscription', 'plan'] as const,
};

export const UPSTREAM_HELP = `Usage (the upstream role; configured by UPSTREAM_DATABASE_URL and the settings in the README):
${UPSTREAM_GROUP.help}`;

export async function runUpstreamCommand(args: string[], ctx: UpstreamCommandContext): Promise<number> {
  try {
    // `meshhub upstream` alone serves; `start` is the old word for `serve`.
    const { sub, rest } =
      args.length === 0 || args[0] === 'start'
        ? { sub: 'serve' as const, rest: args.slice(1) }
        : pickSubcommand(args, UPSTREAM_GROUP);
    switch (sub) {
      case 'serve':
        parseCommand(rest, SERVE, ctx.err);
        return await runUpstreamServer(ctx.env, ctx.err);
      case 'migrate':
        parseCommand(rest, MIGRATE, ctx.err);
        return await withPool(ctx, async (pool) => {
          await migrateUpstream(pool);
          const now = Date.now();
          await ensurePartitions(pool, [now, now + 32 * 86_400_000]);
          ctx.out('the upstream database is migrated\n');
          return 0;
        });
      case 'site':
        return await siteCommand(rest, ctx);
      case 'user':
        return await userCommand(rest, ctx);
      case 'subscription':
        return await subscriptionCommand(rest, ctx);
      case 'plan': {
        // Loaded only when asked for, as the billing plugin is.
        const { runUpstreamPlanCommand } = await import('./billing/plan-commands.js');
        return await runUpstreamPlanCommand(rest, ctx);
      }
    }
  } catch (error) {
    return reportUpstreamError(error, ctx);
  }
}

/** Reports what a command line or the upstream's settings got wrong (exit 2 or 1); rethrows the rest. */
export function reportUpstreamError(error: unknown, ctx: CliIo, prefix = 'meshhub upstream'): number {
  const code = reportCliError(error, ctx);
  if (code !== undefined) return code;
  if (error instanceof InvalidUserError || error instanceof UserExistsError) {
    ctx.err(`${prefix}: ${error.message}\n`);
    return 1;
  }
  if (error instanceof ConfigError) {
    ctx.err(`${prefix}: ${error.message}\n`);
    return 1;
  }
  if (isTransientDatabaseError(error)) {
    ctx.err(`${prefix}: PostgreSQL (UPSTREAM_DATABASE_URL) does not answer: ${(error as Error).message}\n`);
    return 1;
  }
  throw error;
}

/** A small pool on UPSTREAM_DATABASE_URL, migrated: commands may run before the first `meshhub upstream`. */
export async function openMigratedPool(ctx: UpstreamCommandContext): Promise<pg.Pool> {
  const settings = loadUpstreamDatabaseSettings(ctx.env);
  const pool = openPool(settings.UPSTREAM_DATABASE_URL.reveal(), { max: 2 });
  try {
    await migrateUpstream(pool);
    return pool;
  } catch (error) {
    await pool.end();
    throw error;
  }
}

/** Runs `fn` on a migrated pool for one command, and ends the pool after. */
async function withPool<T>(ctx: UpstreamCommandContext, fn: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const pool = await openMigratedPool(ctx);
  try {
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

function when(value: unknown): string {
  if (value === null || value === undefined) return 'never';
  const at = value instanceof Date ? value.getTime() : Number(value);
  return Number.isFinite(at) ? new Date(at).toISOString() : 'never';
}

// ---- sites ----

/**
 * The key set of a `--public-key` file: a JWK set (`{ "keys": [...] }`, as `meshhub sync key`
 * prints it and /.well-known/jwks.json serves it) or one JWK. The registry checks the keys
 * (Ed25519, public only); a site's private key file is refused here by name.
 */
export function readSitePublicKeys(file: string): unknown {
  const usage = 'meshhub upstream site add';
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`${usage}: cannot read ${file}: ${(error as Error).message}`, 1);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError(`${usage}: ${file} is not JSON (expected a JWK set)`, 1);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new UsageError(`${usage}: ${file} must hold a JWK set: {"keys": [...]}`, 1);
  }
  if ('privateJwk' in parsed) {
    throw new UsageError(
      `${usage}: ${file} is a site's private signing key; register its public key (meshhub sync key at the site)`,
      1,
    );
  }
  return 'keys' in parsed ? parsed : { keys: [parsed] };
}

function siteId(value: string, usage: string): string {
  const parsed = siteIdSchema.safeParse(value);
  if (!parsed.success)
    throw new UsageError(`${usage}: "${value}" is not a site id (${parsed.error.issues[0]!.message})`);
  return parsed.data;
}

async function siteCommand(args: string[], ctx: UpstreamCommandContext): Promise<number> {
  const { sub, rest } = pickSubcommand(args, SITE_GROUP);
  const { values, positionals } = parseCommand(rest, SITE_COMMANDS[sub] as typeof SITE_COMMANDS.add, ctx.err);
  const usage = SITE_COMMANDS[sub].name;
  switch (sub) {
    case 'add': {
      const id = siteId(one(positionals, 'site id', usage), usage);
      const file = values['public-key'];
      const url = values['jwks-url'];
      if ((file === undefined) === (url === undefined)) {
        throw new UsageError(`${usage}: give either --public-key <jwks-file> or --jwks-url <url>`);
      }
      const keys =
        file !== undefined ? { publicJwks: readSitePublicKeys(file) as JSONWebKeySet } : { jwksUrl: url! };
      const name = values.name?.trim();
      if (name !== undefined && (name.length === 0 || name.length > 128)) {
        throw new UsageError(`${usage}: --name must be 1 to 128 characters`);
      }
      return withPool(ctx, async (pool) => {
        const sites = new SiteRegistry(pool);
        const existing = await sites.get(id);
        if (existing && !values.replace) {
          throw new UsageError(
            `${usage}: site ${id} is registered already; give --replace to replace its keys (this also lifts a revocation)`,
            1,
          );
        }
        let site: SiteRow;
        try {
          site = await sites.add({ siteId: id, ...(name ? { name } : {}), ...keys });
        } catch (error) {
          if (error instanceof SiteRegistryError) throw new UsageError(`${usage}: ${error.message}`, 1);
          throw error;
        }
        const what = 'jwksUrl' in keys ? `the keys at ${keys.jwksUrl}` : `the public key(s) in ${file}`;
        ctx.out(
          `${existing ? 'replaced the keys of' : 'registered'} site ${site.siteId}${site.name ? ` (${site.name})` : ''}: requests signed with ${what} are accepted\n`,
        );
        return 0;
      });
    }
    case 'list': {
      return withPool(ctx, async (pool) => {
        const sites = await new SiteRegistry(pool).list();
        if (sites.length === 0)
          ctx.out(
            'no sites yet; register one with: meshhub upstream site add <site_id> --public-key <file>\n',
          );
        for (const s of sites) {
          const state = s.revokedAt !== null ? 'revoked' : 'active';
          ctx.out(
            `${s.siteId.padEnd(24)} ${state.padEnd(8)} acked ${String(s.ackedSeq).padEnd(10)} nodes ${String(s.nodeCount).padEnd(6)} last contact ${when(s.lastContactAt)}${s.name ? `  ${s.name}` : ''}\n`,
          );
        }
        return 0;
      });
    }
    case 'revoke': {
      const id = siteId(one(positionals, 'site id', usage), usage);
      return withPool(ctx, async (pool) => {
        const sites = new SiteRegistry(pool);
        const site = await sites.get(id);
        if (!site) throw new UsageError(`${usage}: no site ${id}`, 1);
        if (site.revokedAt !== null) {
          ctx.out(`site ${id} was revoked already (${when(site.revokedAt)})\n`);
          return 0;
        }
        await sites.revoke(id);
        ctx.out(`revoked site ${id}: its requests are refused from now on; its data stays\n`);
        return 0;
      });
    }
  }
}

// ---- users ----

/**
 * `user revoke|disable|enable <name>`: each changes the user and says what it did, or answers
 * undefined when there is no such user.
 */
const USER_CHANGES: Record<
  'revoke' | 'disable' | 'enable',
  (users: UpstreamUserService, username: string) => Promise<string | undefined>
> = {
  revoke: async (users, username) =>
    (await users.revokeTokens(username))
      ? `every token of ${username.toLowerCase()} is revoked; they sign in again with their password`
      : undefined,
  disable: async (users, username) => {
    const told = await users.disable(username);
    return told === undefined
      ? undefined
      : `disabled ${username.toLowerCase()}: no new tokens; ${told} site(s) will revoke their subscriptions (their tokens were revoked)`;
  },
  enable: async (users, username) =>
    (await users.enable(username))
      ? `enabled ${username.toLowerCase()} (grant subscriptions again: disabling revoked them at the sites)`
      : undefined,
};

/** Applies `change` to the user `username` and prints what it says; undefined means there is no such user (exit 1). */
function changeUser(
  ctx: UpstreamCommandContext,
  usage: string,
  username: string,
  change: (users: UpstreamUserService) => Promise<string | undefined>,
): Promise<number> {
  return withPool(ctx, async (pool) => {
    const done = await change(new UpstreamUserService(pool));
    if (done === undefined) throw new UsageError(`${usage}: no user "${username}"`, 1);
    ctx.out(`${done}\n`);
    return 0;
  });
}

async function userCommand(args: string[], ctx: UpstreamCommandContext): Promise<number> {
  const { sub, rest } = pickSubcommand(args, USER_GROUP);
  const command = USER_COMMANDS[sub];
  const usage = command.name;
  const { values, positionals } = parseCommand(rest, command as typeof USER_COMMANDS.add, ctx.err);
  switch (sub) {
    case 'add': {
      const username = one(positionals, 'user name', usage);
      const roles = rolesFrom(values, usage);
      // Before --password-stdin, the upstream read stdin unasked: still so, with a deprecation line.
      const password = await readPassword(values, ctx, usage, true);
      return withPool(ctx, async (pool) => {
        const user = await new UpstreamUserService(pool).add({ username, password, roles });
        ctx.out(`created user ${user.username} (${user.roles.join(', ')})\n`);
        return 0;
      });
    }
    case 'list':
      return withPool(ctx, async (pool) => {
        const users = await new UpstreamUserService(pool).list();
        if (users.length === 0)
          ctx.out('no users yet; add one with: meshhub upstream user add <name> --password-stdin\n');
        for (const u of users) {
          ctx.out(
            `${u.username.padEnd(32)} ${u.roles.join(',').padEnd(24)} ${(u.disabled ? 'disabled' : 'active').padEnd(8)} created ${when(u.createdAt)}\n`,
          );
        }
        return 0;
      });
    case 'passwd': {
      const username = one(positionals, 'user name', usage);
      const password = await readPassword(values, ctx, usage, true);
      return changeUser(ctx, usage, username, async (users) =>
        (await users.setPassword(username, password))
          ? `password of ${username.toLowerCase()} changed`
          : undefined,
      );
    }
    case 'revoke':
    case 'disable':
    case 'enable': {
      const username = one(positionals, 'user name', usage);
      return changeUser(ctx, usage, username, (users) => USER_CHANGES[sub](users, username));
    }
  }
}

// ---- subscriptions ----

export interface SubscriptionGrant {
  /** A local username, or `idp:<sub>`. */
  subscriber: string;
  nodes: 'all' | readonly string[];
  /** ms since the epoch, or null for no expiry. */
  expiresAt: number | null;
  source: string;
  reference?: string | null;
}

/**
 * Stores an active upstream subscription and, in the same transaction, queues a `subscription`
 * command for every site (not revoked) that has heard any of its nodes, or every such site for
 * `all`. Returns its id and the sites told.
 */
export async function grantUpstreamSubscription(
  pool: pg.Pool,
  grant: SubscriptionGrant,
  now = Date.now(),
): Promise<{ id: number; sites: string[] }> {
  // The same rows and `subscription` commands as a settled invoice (billing/grants.ts).
  return withTransaction(pool, (client) =>
    grantOrExtend(
      client,
      null,
      {
        subscriber: grant.subscriber,
        nodes: grant.nodes,
        expiresAt: grant.expiresAt,
        reference: grant.reference ?? null,
        source: grant.source,
      },
      now,
    ),
  );
}

async function subscriptionCommand(args: string[], ctx: UpstreamCommandContext): Promise<number> {
  pickSubcommand(args, SUBSCRIPTION_GROUP);
  const usage = SUBSCRIPTION_GRANT.name;
  const { values, positionals } = parseCommand(args.slice(1), SUBSCRIPTION_GRANT, ctx.err);
  const [who, ...extra] = positionals;
  if (!who) throw new UsageError(`${usage}: name a user (or idp:<sub>)`);
  const subscriber = who.startsWith(EXTERNAL_PRINCIPAL_PREFIX) ? who : who.toLowerCase();
  const nodes = nodesFrom(values, extra, usage, ctx.err);
  const now = Date.now();
  const expiresAt = expiresFrom(values, usage, now);
  return withPool(ctx, async (pool) => {
    if (!subscriber.startsWith(EXTERNAL_PRINCIPAL_PREFIX)) {
      const user = await new UpstreamUserService(pool).get(subscriber);
      if (!user)
        throw new UsageError(`${usage}: no user "${subscriber}" (add it with meshhub upstream user add)`, 1);
      if (user.disabled) throw new UsageError(`${usage}: user "${subscriber}" is disabled`, 1);
    }
    const granted = await grantUpstreamSubscription(
      pool,
      { subscriber, nodes, expiresAt, source: 'cli' },
      now,
    );
    const scope = nodes === 'all' ? 'all nodes' : nodes.join(' ');
    const until = expiresAt === null ? 'no expiry' : `until ${new Date(expiresAt).toISOString()}`;
    ctx.out(
      `granted #${granted.id} ${subscriber} ${until}: ${scope}; told ${granted.sites.length} site(s)${granted.sites.length ? ` (${granted.sites.join(', ')})` : ''}\n`,
    );
    return 0;
  });
}
