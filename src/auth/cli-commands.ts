/**
 * `meshhub user …` and `meshhub token …`: they open the hub's SQLite file and signing key in
 * DATA_DIR directly, so they work while the hub runs (WAL lets both write; a busy database is
 * waited for). Passwords come only from stdin (`--password-stdin`) or MESHHUB_PASSWORD, never
 * from arguments, which would show in `ps` and the shell history. The upstream's user commands
 * (sync/upstream/commands.ts) take the same words (`rolesFrom`, `readPassword`, PASSWORD_OPTIONS).
 *
 * Every command that opens the database says which file on stderr (`openHubDatabase`), so stdout
 * carries only what a script captures (`TOKEN=$(meshhub token alice)`).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseDuration, splitList } from '../config/fields.js';
import {
  type CliCommand,
  type CliOption,
  type CliValues,
  parseCommand,
  pickSubcommand,
  reportCliError,
  UsageError,
} from '../kernel/cli-args.js';
import { type Database, HUB_DATABASE_FILE, openDatabase } from '../store/database.js';
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
  /** Where dataDir came from, said with the database's path: `DATA_DIR`, or the default's note. */
  dataDirFrom?: string;
  /** BACKUP_DIR: where a migration's copy goes if a command's open migrates (default: beside the file). */
  backupDir?: string;
  /** For MESHHUB_PASSWORD; none: only stdin. */
  env?: Readonly<Record<string, string | undefined>>;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  out: (text: string) => void;
  err: (text: string) => void;
}

/** How the CLI names where DATA_DIR came from (`env` is the process environment). */
export function dataDirFrom(env: Readonly<Record<string, string | undefined>>): string {
  return env.DATA_DIR?.trim() ? 'DATA_DIR' : 'DATA_DIR is unset: the default ./data';
}

/**
 * Opens DATA_DIR's hub database and says which on stderr. A missing file is refused (exit 1)
 * rather than created empty in a wrong place, unless `create` (`meshhub user add` on a fresh
 * install), which says it created it.
 */
export function openHubDatabase(ctx: CommandContext, options: { create?: boolean } = {}): Database {
  const file = resolve(ctx.dataDir, HUB_DATABASE_FILE);
  const from = ctx.dataDirFrom ?? 'DATA_DIR';
  const existed = existsSync(file);
  if (!existed && !options.create) {
    throw new UsageError(
      `meshhub: no hub database at ${file} (${from}); set DATA_DIR to the running hub's data directory`,
      1,
    );
  }
  const db = openDatabase(file, ctx.backupDir === undefined ? {} : { backupDir: ctx.backupDir });
  ctx.err(`meshhub: ${existed ? 'using' : 'created a new'} database ${file} (${from})\n`);
  return db;
}

function withDatabase<T>(
  ctx: CommandContext,
  fn: (db: Database) => Promise<T>,
  options: { create?: boolean } = {},
): Promise<T> {
  const db = openHubDatabase(ctx, options);
  // Plain close, no checkpoint: the running hub owns the WAL.
  return fn(db).finally(() => db.close());
}

// ---- words shared with the upstream's user commands ----

export const ROLES_OPTIONS = {
  roles: { type: 'string' },
  admin: { type: 'boolean', deprecated: '--roles admin' },
  role: { type: 'string', multiple: true, deprecated: '--roles ROLE,ROLE' },
} as const satisfies Record<string, CliOption>;

export const PASSWORD_OPTIONS = {
  'password-stdin': { type: 'boolean' },
} as const satisfies Record<string, CliOption>;

/** The roles `--roles a,b` (or the deprecated `--role a --role b`, `--admin`) name; subscriber when none. */
export function rolesFrom(values: CliValues<typeof ROLES_OPTIONS>, usage: string): string[] {
  const roles = [...splitList(values.roles ?? ''), ...(values.role ?? [])];
  if (values.roles !== undefined && roles.length === 0) {
    throw new UsageError(`${usage}: --roles expects e.g. subscriber or subscriber,${ADMIN_ROLE}`);
  }
  if (values.admin) roles.push(ADMIN_ROLE);
  if (roles.length === 0) roles.push(SUBSCRIBER_ROLE);
  return [...new Set(roles)];
}

const MAX_PASSWORD_BYTES = 4096;

/**
 * The password: stdin with `--password-stdin`, else MESHHUB_PASSWORD. `implicitStdin` (the
 * upstream's old way) reads stdin without the flag, with a deprecation line.
 */
export async function readPassword(
  values: CliValues<typeof PASSWORD_OPTIONS>,
  ctx: Pick<CommandContext, 'env' | 'stdin' | 'err'>,
  usage: string,
  implicitStdin = false,
): Promise<string> {
  const missing = `${usage}: give the password on stdin with --password-stdin, or in MESHHUB_PASSWORD`;
  if (!values['password-stdin']) {
    const fromEnv = ctx.env?.MESHHUB_PASSWORD;
    if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
    if (!implicitStdin) throw new UsageError(missing);
    ctx.err(`${usage}: a password on stdin without --password-stdin is deprecated, use --password-stdin\n`);
  }
  if (ctx.stdin.isTTY) ctx.err('password (then Enter and Ctrl-D): ');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.stdin) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buffer.length;
    if (size > MAX_PASSWORD_BYTES) {
      throw new InvalidUserError('password', `on stdin is longer than ${MAX_PASSWORD_BYTES} bytes`);
    }
    chunks.push(buffer);
  }
  // One trailing newline is what `echo` and a terminal add; it is not part of the password.
  const password = Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
  if (password === '') throw new UsageError(missing);
  return password;
}

/** The one argument of `<usage> <what>`. */
export function one(positionals: string[], what: string, usage: string): string {
  if (positionals.length !== 1) throw new UsageError(`${usage}: expected one ${what}`);
  return positionals[0]!;
}

// ---- meshhub user ----

const USER_ADD = {
  name: 'meshhub user add',
  help: `  meshhub user add <name> [--roles ROLE,ROLE] --password-stdin
                        Create a user; the password is read from stdin (or MESHHUB_PASSWORD).
                        Roles: subscriber (the default), admin, or any others (device, ingest).
                        Creates the database in DATA_DIR on a fresh install.
`,
  options: { ...ROLES_OPTIONS, ...PASSWORD_OPTIONS },
} satisfies CliCommand;

const USER_LIST = {
  name: 'meshhub user list',
  help: '  meshhub user list     List users and their roles.\n',
  options: {},
  positionals: false,
} satisfies CliCommand;

const USER_ROLES = {
  name: 'meshhub user roles',
  help: `  meshhub user roles <name> --roles ROLE,ROLE
                        Replace the user's roles (subscriber when none is given).
`,
  options: ROLES_OPTIONS,
} satisfies CliCommand;

const USER_PASSWD = {
  name: 'meshhub user passwd',
  help: '  meshhub user passwd <name> --password-stdin\n',
  options: PASSWORD_OPTIONS,
} satisfies CliCommand;

const USER_REMOVE = {
  name: 'meshhub user remove',
  help: `  meshhub user remove <name>
                        Changing roles or the password, and removing a user, end every token
                        and sign-in of theirs at once.
`,
  options: {},
} satisfies CliCommand;

const TOKEN_ISSUE = {
  name: 'meshhub token',
  help: `  meshhub token <name> [--ttl 1h]
                        Print an access token (JWT) for the user, valid for --ttl (max 365d).
`,
  options: { ttl: { type: 'string' } },
} satisfies CliCommand;

const TOKEN_REVOKE = {
  name: 'meshhub token revoke',
  help: `  meshhub token revoke <name>
                        End every token and sign-in of the user now (the user stays).
`,
  options: {},
} satisfies CliCommand;

const USER_COMMANDS = {
  add: USER_ADD,
  list: USER_LIST,
  roles: USER_ROLES,
  passwd: USER_PASSWD,
  remove: USER_REMOVE,
};

export const TOKEN_HELP = TOKEN_ISSUE.help + TOKEN_REVOKE.help;

export const USER_HELP = `Usage:\n${Object.values(USER_COMMANDS)
  .map((c) => c.help)
  .join('')}${TOKEN_HELP}`;

const USER_GROUP = {
  name: 'meshhub user',
  help: USER_HELP.replace(/^Usage:\n/, ''),
  subcommands: Object.keys(USER_COMMANDS) as Array<keyof typeof USER_COMMANDS>,
};

const MAX_TOKEN_TTL_MS = 365 * 86_400_000;

export type Command = (args: string[], ctx: CommandContext) => Promise<number>;

/** `command` with its help, usage and input errors reported as exit codes (`reportError`). */
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
  const { sub, rest } = pickSubcommand(args, USER_GROUP);
  const warn = ctx.err;
  switch (sub) {
    case 'add': {
      const { values, positionals } = parseCommand(rest, USER_ADD, warn);
      const username = one(positionals, 'user name', USER_ADD.name);
      const roles = rolesFrom(values, USER_ADD.name);
      const password = await readPassword(values, ctx, USER_ADD.name);
      const user = await withDatabase(
        ctx,
        (db) => new HubUserService(db).add({ username, password, roles }),
        {
          create: true,
        },
      );
      ctx.out(`created user ${user.username} (${user.roles.join(', ')})\n`);
      return 0;
    }
    case 'list': {
      parseCommand(rest, USER_LIST, warn);
      const users = await withDatabase(ctx, async (db) => new HubUserService(db).list());
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
      const { values, positionals } = parseCommand(rest, USER_ROLES, warn);
      const username = one(positionals, 'user name', USER_ROLES.name);
      const roles = rolesFrom(values, USER_ROLES.name);
      const changed = await withDatabase(ctx, async (db) => new HubUserService(db).setRoles(username, roles));
      if (!changed) throw new UsageError(`meshhub user roles: no user "${username}"`, 1);
      ctx.out(`roles of ${username.toLowerCase()} are now ${roles.join(', ')} (their tokens were revoked)\n`);
      return 0;
    }
    case 'passwd': {
      const { values, positionals } = parseCommand(rest, USER_PASSWD, warn);
      const username = one(positionals, 'user name', USER_PASSWD.name);
      const password = await readPassword(values, ctx, USER_PASSWD.name);
      const changed = await withDatabase(ctx, (db) => new HubUserService(db).setPassword(username, password));
      if (!changed) throw new UsageError(`meshhub user passwd: no user "${username}"`, 1);
      ctx.out(`password of ${username.toLowerCase()} changed (their tokens were revoked)\n`);
      return 0;
    }
    case 'remove': {
      const { positionals } = parseCommand(rest, USER_REMOVE, warn);
      const username = one(positionals, 'user name', USER_REMOVE.name);
      const removed = await withDatabase(ctx, async (db) => new HubUserService(db).remove(username));
      if (!removed) throw new UsageError(`meshhub user remove: no user "${username}"`, 1);
      ctx.out(`removed user ${username.toLowerCase()} (their tokens were revoked)\n`);
      return 0;
    }
  }
}

export const runTokenCommand = reportingErrors(tokenCommand);

async function tokenCommand(args: string[], ctx: CommandContext): Promise<number> {
  if (args[0] === 'revoke') return await revokeTokens(args.slice(1), ctx);
  const { values, positionals } = parseCommand(args, { ...TOKEN_ISSUE, help: TOKEN_HELP }, ctx.err);
  const name = one(positionals, 'user name', TOKEN_ISSUE.name);
  const ttlMs = parseDuration(values.ttl ?? '1h');
  if (ttlMs === undefined || ttlMs < 1000 || ttlMs > MAX_TOKEN_TTL_MS) {
    throw new UsageError(
      'meshhub token: --ttl expects a duration from 1s to 365d, like 90s, 15m, 24h or 30d',
    );
  }
  const user = await withDatabase(ctx, async (db) => {
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
async function revokeTokens(args: string[], ctx: CommandContext): Promise<number> {
  const { positionals } = parseCommand(args, TOKEN_REVOKE, ctx.err);
  const name = one(positionals, 'user name', TOKEN_REVOKE.name);
  const revoked = await withDatabase(ctx, async (db) => new HubUserService(db).revokeTokens(name));
  if (!revoked) throw new UsageError(`meshhub token revoke: no user "${name}"`, 1);
  ctx.out(`revoked every token and sign-in of ${name.toLowerCase()}\n`);
  return 0;
}

export function reportError(error: unknown, ctx: CommandContext): number {
  const code = reportCliError(error, ctx);
  if (code !== undefined) return code;
  if (error instanceof InvalidUserError || error instanceof UserExistsError) {
    ctx.err(`meshhub: ${error.message}\n`);
    return 1;
  }
  throw error;
}
