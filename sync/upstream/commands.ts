/**
 * `meshhub upstream …`: run the upstream, migrate its database, register and revoke sites,
 * manage its users and grant subscriptions. The database commands need only
 * UPSTREAM_DATABASE_URL and work while upstream processes run (they share PostgreSQL).
 * Passwords come from MESHHUB_PASSWORD or stdin, never from arguments (they would show in `ps`
 * and the shell history). Exit codes as the hub's CLI: 0 done, 1 refused (no such site or user,
 * exists already, database unreachable, invalid settings), 2 usage errors.
 */

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { JSONWebKeySet } from 'jose';
import type pg from 'pg';
import { UsageError } from '../../src/auth/cli-commands.js';
import { EXTERNAL_PRINCIPAL_PREFIX } from '../../src/auth/hub-identity.js';
import { ADMIN_ROLE, SUBSCRIBER_ROLE } from '../../src/auth/user-service.js';
import { splitList } from '../../src/config/fields.js';
import { ConfigError } from '../../src/config/load.js';
import { NODE_ID_PATTERN } from '../../src/messaging/schemas.js';
import { parseUntil } from '../../src/messaging/subscription-commands.js';
import { siteIdSchema } from '../protocol.js';
import { InvalidUserError, UpstreamUserService, UserExistsError } from './auth/user-service.js';
import { grantOrExtend } from './billing/grants.js';
import { migrateUpstream } from './db/migrate.js';
import { ensurePartitions } from './db/partitions.js';
import { isTransientDatabaseError, openPool, withTransaction } from './db/pool.js';
import { runUpstreamServer } from './main.js';
import { loadUpstreamDatabaseSettings } from './settings.js';
import { SiteRegistry, SiteRegistryError, type SiteRow } from './sites.js';

export interface UpstreamCommandContext {
  env: Readonly<Record<string, string | undefined>>;
  /** Where `user add` / `user passwd` read the password when MESHHUB_PASSWORD is not set. */
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  out: (text: string) => void;
  err: (text: string) => void;
}

export const UPSTREAM_HELP = `Usage (the upstream role; configured by UPSTREAM_DATABASE_URL and the settings in the README):
  meshhub upstream      Run the upstream: migrate, then serve the sync, read, messaging and auth
                        APIs and the web UI on HTTP_HOST:HTTP_PORT.
  meshhub upstream migrate
                        Apply the PostgreSQL schema migrations and exit.
  meshhub upstream site add <site_id> (--public-key <jwks-file> | --jwks-url <url>) [--name <name>] [--replace]
                        Register a site and the public key its requests are signed with (the
                        site's \`meshhub sync key\`, or its /.well-known/jwks.json). --replace
                        replaces a registered site's keys (and lifts its revocation).
  meshhub upstream site list
  meshhub upstream site revoke <site_id>
                        Refuse the site's requests from now on (its data stays).
  meshhub upstream user add <name> [--roles subscriber[,admin]]
                        Create a user; the password comes from MESHHUB_PASSWORD or stdin.
  meshhub upstream user list
  meshhub upstream user passwd <name>
  meshhub upstream user revoke <name>
                        End every token and sign-in of the user now (they sign in again).
  meshhub upstream user disable <name>
                        Refuse the user's logins and revoke their subscriptions at every site.
  meshhub upstream user enable <name>
  meshhub upstream subscription grant <principal> --nodes all|!id,!id [--expires DATE]
                        Let a user (or idp:<sub>) text every node (all) or the nodes named, until
                        DATE (2026-12-31, or an ISO date-time); the sites that heard those nodes
                        (every site for all) are told.
`;

export async function runUpstreamCommand(args: string[], ctx: UpstreamCommandContext): Promise<number> {
  const [command, ...rest] = args;
  try {
    switch (command) {
      case undefined:
      case 'serve':
      case 'start':
        if (rest.length) throw new UsageError(`meshhub upstream: unexpected "${rest[0]}"`);
        return await runUpstreamServer(ctx.env, ctx.err);
      case 'migrate':
        if (rest.length) throw new UsageError(`meshhub upstream migrate: unexpected "${rest[0]}"`);
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
      case 'help':
      case '--help':
      case '-h':
        ctx.out(UPSTREAM_HELP);
        return 0;
      default:
        throw new UsageError(`meshhub upstream: unknown command "${command}"\n\n${UPSTREAM_HELP}`);
    }
  } catch (error) {
    return report(error, ctx);
  }
}

function report(error: unknown, ctx: UpstreamCommandContext): number {
  if (error instanceof UsageError) {
    ctx.err(`${error.message}\n`);
    return error.exitCode;
  }
  if (error instanceof InvalidUserError || error instanceof UserExistsError) {
    ctx.err(`meshhub upstream: ${error.message}\n`);
    return 1;
  }
  if (error instanceof ConfigError) {
    ctx.err(`meshhub upstream: ${error.message}\n`);
    return 1;
  }
  if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    ctx.err(`meshhub upstream: ${(error as Error).message}\n`);
    return 2;
  }
  if (isTransientDatabaseError(error)) {
    ctx.err(
      `meshhub upstream: PostgreSQL (UPSTREAM_DATABASE_URL) does not answer: ${(error as Error).message}\n`,
    );
    return 1;
  }
  throw error;
}

/** Opens a small pool on UPSTREAM_DATABASE_URL for one command, migrated, and ends it after. */
async function withPool<T>(ctx: UpstreamCommandContext, fn: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const settings = loadUpstreamDatabaseSettings(ctx.env);
  const pool = openPool(settings.UPSTREAM_DATABASE_URL.reveal(), { max: 2 });
  try {
    // Commands may run before the first `meshhub upstream`: the tables they write must exist.
    await migrateUpstream(pool);
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

function one(positionals: string[], what: string, usage: string): string {
  if (positionals.length !== 1) throw new UsageError(`${usage}: expected one ${what}`);
  return positionals[0]!;
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
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    options: {
      'public-key': { type: 'string' },
      'jwks-url': { type: 'string' },
      name: { type: 'string' },
      replace: { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  const usage = `meshhub upstream site ${sub ?? ''}`.trim();
  const noOptions = () => {
    if (
      values['public-key'] !== undefined ||
      values['jwks-url'] !== undefined ||
      values.name !== undefined ||
      values.replace
    )
      throw new UsageError(`${usage}: --public-key, --jwks-url, --name and --replace are only for site add`);
  };
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
      noOptions();
      if (positionals.length) throw new UsageError(`${usage}: takes no arguments`);
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
      noOptions();
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
    default:
      throw new UsageError(`meshhub upstream site: unknown subcommand "${sub ?? ''}"\n\n${UPSTREAM_HELP}`);
  }
}

// ---- users ----

async function readPassword(ctx: UpstreamCommandContext): Promise<string> {
  const fromEnv = ctx.env.MESHHUB_PASSWORD;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  if (ctx.stdin.isTTY) ctx.err('password (then Enter and Ctrl-D): ');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.stdin) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buffer.length;
    if (size > 4096) throw new InvalidUserError('password', 'on stdin is longer than 4096 bytes');
    chunks.push(buffer);
  }
  // One trailing newline is what `echo` and a terminal add; it is not part of the password.
  const password = Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
  if (password === '') {
    throw new UsageError('meshhub upstream user: give the password in MESHHUB_PASSWORD or on stdin');
  }
  return password;
}

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
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    options: { roles: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  const usage = `meshhub upstream user ${sub ?? ''}`.trim();
  if (values.roles !== undefined && sub !== 'add')
    throw new UsageError(`${usage}: --roles is only for user add`);
  switch (sub) {
    case 'add': {
      const username = one(positionals, 'user name', usage);
      const roles = splitList(values.roles ?? SUBSCRIBER_ROLE);
      if (roles.length === 0)
        throw new UsageError(`${usage}: --roles expects e.g. subscriber or subscriber,${ADMIN_ROLE}`);
      const password = await readPassword(ctx);
      return withPool(ctx, async (pool) => {
        const user = await new UpstreamUserService(pool).add({ username, password, roles });
        ctx.out(`created user ${user.username} (${user.roles.join(', ')})\n`);
        return 0;
      });
    }
    case 'list':
      if (positionals.length) throw new UsageError(`${usage}: takes no arguments`);
      return withPool(ctx, async (pool) => {
        const users = await new UpstreamUserService(pool).list();
        if (users.length === 0) ctx.out('no users yet; add one with: meshhub upstream user add <name>\n');
        for (const u of users) {
          ctx.out(
            `${u.username.padEnd(32)} ${u.roles.join(',').padEnd(24)} ${(u.disabled ? 'disabled' : 'active').padEnd(8)} created ${when(u.createdAt)}\n`,
          );
        }
        return 0;
      });
    case 'passwd': {
      const username = one(positionals, 'user name', usage);
      const password = await readPassword(ctx);
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
    default:
      throw new UsageError(`meshhub upstream user: unknown subcommand "${sub ?? ''}"\n\n${UPSTREAM_HELP}`);
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
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    options: { nodes: { type: 'string' }, expires: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  const usage = `meshhub upstream subscription ${sub ?? ''}`.trim();
  if (sub !== 'grant') {
    throw new UsageError(
      `meshhub upstream subscription: unknown subcommand "${sub ?? ''}"\n\n${UPSTREAM_HELP}`,
    );
  }
  const who = one(positionals, 'principal (a user name, or idp:<sub>)', usage);
  const subscriber = who.startsWith(EXTERNAL_PRINCIPAL_PREFIX) ? who : who.toLowerCase();
  if (values.nodes === undefined)
    throw new UsageError(`${usage}: give --nodes all or --nodes !a1b2c3d4,!e5f6a7b8`);
  let nodes: 'all' | string[];
  if (values.nodes.trim() === 'all') nodes = 'all';
  else {
    nodes = splitList(values.nodes);
    const bad = nodes.find((n) => !NODE_ID_PATTERN.test(n));
    if (nodes.length === 0 || bad !== undefined) {
      throw new UsageError(
        `${usage}: --nodes expects all or node ids like !a1b2c3d4,!e5f6a7b8${bad === undefined ? '' : ` ("${bad}" is not one)`}`,
      );
    }
  }
  const now = Date.now();
  let expiresAt: number | null = null;
  if (values.expires !== undefined) {
    const until = parseUntil(values.expires);
    if (until === undefined)
      throw new UsageError(
        `${usage}: --expires expects a date like 2026-12-31 or an ISO date-time with an offset`,
      );
    if (until <= now) throw new UsageError(`${usage}: --expires is in the past`);
    expiresAt = until;
  }
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
