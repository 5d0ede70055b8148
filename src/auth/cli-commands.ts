/**
 * `meshhub user …` and `meshhub token …`: they open the hub's SQLite file and signing key in
 * DATA_DIR directly, so they work while the hub runs (WAL lets both write; a busy database is
 * waited for). Passwords come only from stdin (`--password-stdin`), never from arguments, which
 * would show in `ps` and the shell history.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parseDuration } from '../config/fields.js';
import { type Database, openDatabase } from '../store/database.js';
import { LocalIssuer } from './local-issuer.js';
import {
  ADMIN_ROLE,
  HubUserService,
  InvalidUserError,
  SUBSCRIBER_ROLE,
  UserExistsError,
} from './user-service.js';

export interface CommandContext {
  dataDir: string;
  stdin: NodeJS.ReadableStream;
  out: (text: string) => void;
  err: (text: string) => void;
}

export const USER_HELP = `Usage:
  meshhub user add <name> [--admin] [--role ROLE]... --password-stdin
                        Create a user; the password is read from stdin. Roles: subscriber (the
                        default), admin (--admin), or any others (--role device, --role ingest).
  meshhub user list     List users and their roles.
  meshhub user roles <name> [--admin] [--role ROLE]...
                        Replace the user's roles (subscriber when none is given).
  meshhub user passwd <name> --password-stdin
  meshhub user remove <name>
                        Changing roles or the password, and removing a user, end every token
                        and sign-in of theirs at once.
  meshhub token <name> [--ttl 1h]
                        Print an access token (JWT) for the user, valid for --ttl (max 365d).
  meshhub token revoke <name>
                        End every token and sign-in of the user now (the user stays).
`;

const MAX_TOKEN_TTL_MS = 365 * 86_400_000;

export function openHubDatabase(dataDir: string): Database {
  return openDatabase(join(dataDir, 'meshhub.sqlite'));
}

async function readPassword(stdin: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stdin) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buffer.length;
    if (size > 4096) throw new InvalidUserError('password', 'on stdin is longer than 4096 bytes');
    chunks.push(buffer);
  }
  // One trailing newline is what `echo` and a terminal add; it is not part of the password.
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

function withDatabase<T>(dataDir: string, fn: (db: Database) => Promise<T>): Promise<T> {
  const db = openHubDatabase(dataDir);
  // Plain close, no checkpoint: the running hub owns the WAL.
  return fn(db).finally(() => db.close());
}

export type Command = (args: string[], ctx: CommandContext) => Promise<number>;

/** `command` with its usage and input errors reported as exit codes (`reportError`). */
export function reportingErrors(command: Command): Command {
  return async (args, ctx) => {
    try {
      return await command(args, ctx);
    } catch (error) {
      return reportError(error, ctx);
    }
  };
}

export const runUserCommand = reportingErrors(userCommand);

async function userCommand(args: string[], ctx: CommandContext): Promise<number> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    options: {
      admin: { type: 'boolean', default: false },
      role: { type: 'string', multiple: true },
      'password-stdin': { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  const name = positionals[0];
  const needName = () => {
    if (!name || positionals.length !== 1)
      throw new UsageError(`meshhub user ${sub}: expected one user name`);
    return name;
  };
  switch (sub) {
    case 'add': {
      const username = needName();
      if (!values['password-stdin']) {
        throw new UsageError('meshhub user add: give the password on stdin with --password-stdin');
      }
      const password = await readPassword(ctx.stdin);
      const roles = [...(values.role ?? [])];
      if (values.admin) roles.push(ADMIN_ROLE);
      if (roles.length === 0) roles.push(SUBSCRIBER_ROLE);
      const user = await withDatabase(ctx.dataDir, (db) =>
        new HubUserService(db).add({ username, password, roles }),
      );
      ctx.out(`created user ${user.username} (${user.roles.join(', ')})\n`);
      return 0;
    }
    case 'list': {
      const users = await withDatabase(ctx.dataDir, async (db) => new HubUserService(db).list());
      if (users.length === 0)
        ctx.out('no users yet; add one with: meshhub user add <name> --password-stdin\n');
      for (const u of users) {
        ctx.out(
          `${u.username.padEnd(32)} ${u.roles.join(',').padEnd(24)} created ${new Date(u.createdAt).toISOString()}\n`,
        );
      }
      return 0;
    }
    case 'roles': {
      const username = needName();
      const roles = [...(values.role ?? [])];
      if (values.admin) roles.push(ADMIN_ROLE);
      if (roles.length === 0) roles.push(SUBSCRIBER_ROLE);
      const changed = await withDatabase(ctx.dataDir, async (db) =>
        new HubUserService(db).setRoles(username, roles),
      );
      if (!changed) throw new UsageError(`meshhub user roles: no user "${username}"`, 1);
      ctx.out(
        `roles of ${username.toLowerCase()} are now ${[...new Set(roles)].join(', ')} (their tokens were revoked)\n`,
      );
      return 0;
    }
    case 'passwd': {
      const username = needName();
      if (!values['password-stdin'])
        throw new UsageError('meshhub user passwd: give the password on stdin with --password-stdin');
      const password = await readPassword(ctx.stdin);
      const changed = await withDatabase(ctx.dataDir, (db) =>
        new HubUserService(db).setPassword(username, password),
      );
      if (!changed) throw new UsageError(`meshhub user passwd: no user "${username}"`, 1);
      ctx.out(`password of ${username.toLowerCase()} changed (their tokens were revoked)\n`);
      return 0;
    }
    case 'remove': {
      const username = needName();
      const removed = await withDatabase(ctx.dataDir, async (db) => new HubUserService(db).remove(username));
      if (!removed) throw new UsageError(`meshhub user remove: no user "${username}"`, 1);
      ctx.out(`removed user ${username.toLowerCase()} (their tokens were revoked)\n`);
      return 0;
    }
    default:
      throw new UsageError(`meshhub user: unknown subcommand "${sub ?? ''}"\n\n${USER_HELP}`);
  }
}

export const runTokenCommand = reportingErrors(tokenCommand);

async function tokenCommand(args: string[], ctx: CommandContext): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { ttl: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals[0] === 'revoke') return await revokeTokens(positionals.slice(1), values, ctx);
  const name = positionals[0];
  if (!name || positionals.length !== 1) throw new UsageError('meshhub token: expected one user name');
  const ttlMs = parseDuration(values.ttl ?? '1h');
  if (ttlMs === undefined || ttlMs < 1000 || ttlMs > MAX_TOKEN_TTL_MS) {
    throw new UsageError(
      'meshhub token: --ttl expects a duration from 1s to 365d, like 90s, 15m, 24h or 30d',
    );
  }
  const user = await withDatabase(ctx.dataDir, async (db) => {
    const users = new HubUserService(db);
    const found = await users.get(name);
    return found && { ...found, tokenVersion: (await users.tokenVersion(found.username)) ?? 0 };
  });
  if (!user) throw new UsageError(`meshhub token: no user "${name}"`, 1);
  const issuer = await LocalIssuer.open(ctx.dataDir, { warn: (m) => ctx.err(`meshhub: ${m}\n`) });
  const token = await issuer.issue(user, ttlMs / 1000);
  ctx.out(`${token.accessToken}\n`);
  return 0;
}

/** `meshhub token revoke <name>`: bumps the user's token version; the running hub sees it on the next request. */
async function revokeTokens(
  positionals: string[],
  values: { ttl?: string | undefined },
  ctx: CommandContext,
): Promise<number> {
  const name = positionals[0];
  if (!name || positionals.length !== 1) throw new UsageError('meshhub token revoke: expected one user name');
  if (values.ttl !== undefined)
    throw new UsageError('meshhub token revoke: --ttl is only for issuing a token');
  const revoked = await withDatabase(ctx.dataDir, async (db) => new HubUserService(db).revokeTokens(name));
  if (!revoked) throw new UsageError(`meshhub token revoke: no user "${name}"`, 1);
  ctx.out(`revoked every token and sign-in of ${name.toLowerCase()}\n`);
  return 0;
}

export class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message);
  }
}

export function reportError(error: unknown, ctx: CommandContext): number {
  if (error instanceof UsageError) {
    ctx.err(`${error.message}\n`);
    return error.exitCode;
  }
  if (error instanceof InvalidUserError || error instanceof UserExistsError) {
    ctx.err(`meshhub: ${error.message}\n`);
    return 1;
  }
  if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    ctx.err(`meshhub: ${(error as Error).message}\n`);
    return 2;
  }
  throw error;
}
