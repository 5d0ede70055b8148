/**
 * `meshhub subscription grant|revoke|list`: run against DATA_DIR's database, also while the hub
 * runs. `--expires 2026-12-31` means through that day (UTC): the subscription ends at the next
 * midnight UTC; a date-time with an offset is taken as given. The upstream's
 * `meshhub upstream subscription grant` takes the same words (`nodesFrom`, `expiresFrom`).
 */

import { type CommandContext, openHubDatabase, reportingErrors } from '../auth/cli-commands.js';
import { EXTERNAL_PRINCIPAL_PREFIX } from '../auth/hub-identity.js';
import { HubUserService } from '../auth/user-service.js';
import { splitList } from '../config/fields.js';
import {
  type CliCommand,
  type CliOption,
  type CliValues,
  parseCommand,
  pickSubcommand,
  UsageError,
} from '../kernel/cli-args.js';
import { type Subscription, SubscriptionRepository } from './subscription-repository.js';
import { NODE_ID_PATTERN } from './validation.js';

/** `--nodes all|!id,!id` and the old spellings (`--all`, node ids as arguments). */
export const NODES_OPTIONS = {
  nodes: { type: 'string' },
  all: { type: 'boolean', deprecated: '--nodes all' },
} as const satisfies Record<string, CliOption>;

/** `--expires DATE` and the old `--until DATE`. */
export const EXPIRES_OPTIONS = {
  expires: { type: 'string' },
  until: { type: 'string', deprecated: '--expires' },
} as const satisfies Record<string, CliOption>;

const GRANT = {
  name: 'meshhub subscription grant',
  help: `  meshhub subscription grant <user> --nodes all|!a1b2c3d4,... [--expires DATE]
                        Let a user message every node of the site (all) or the nodes named,
                        until DATE (2026-12-31, or 2026-12-31T18:00:00+01:00).
                        <user> is a local user, or idp:<sub> for an identity-provider user.
`,
  options: { ...NODES_OPTIONS, ...EXPIRES_OPTIONS },
} satisfies CliCommand;

const REVOKE = {
  name: 'meshhub subscription revoke',
  help: `  meshhub subscription revoke <user> --nodes all|!a1b2c3d4,...
                        Revoke all of the user's subscriptions, or take nodes out of them.
`,
  options: NODES_OPTIONS,
} satisfies CliCommand;

const LIST = {
  name: 'meshhub subscription list',
  help: '  meshhub subscription list [<user>]\n',
  options: {},
} satisfies CliCommand;

const SUBSCRIPTION_COMMANDS = { grant: GRANT, revoke: REVOKE, list: LIST };

const GROUP = {
  name: 'meshhub subscription',
  help: Object.values(SUBSCRIPTION_COMMANDS)
    .map((c) => c.help)
    .join(''),
  subcommands: Object.keys(SUBSCRIPTION_COMMANDS) as Array<keyof typeof SUBSCRIPTION_COMMANDS>,
};

export const SUBSCRIPTION_HELP = `Usage:\n${GROUP.help}`;

/**
 * The nodes `--nodes all|!id,!id` names; the deprecated `--all` and node ids given as arguments
 * (`extra`, said on stderr) still count. Exactly one scope.
 */
export function nodesFrom(
  values: CliValues<typeof NODES_OPTIONS>,
  extra: string[],
  usage: string,
  warn: (text: string) => void,
): 'all' | string[] {
  if (extra.length > 0)
    warn(`${usage}: node ids as arguments are deprecated, use --nodes ${extra.join(',')}\n`);
  const listed = values.nodes === undefined || values.nodes.trim() === 'all' ? [] : splitList(values.nodes);
  const all = values.all === true || values.nodes?.trim() === 'all';
  const ids = [...listed, ...extra];
  if (all === ids.length > 0 || (values.nodes !== undefined && !all && listed.length === 0)) {
    throw new UsageError(`${usage}: give --nodes all or --nodes !a1b2c3d4,!e5f6a7b8 (one of them)`);
  }
  if (all) return 'all';
  const bad = ids.find((n) => !NODE_ID_PATTERN.test(n));
  if (bad !== undefined) throw new UsageError(`${usage}: --nodes: "${bad}" is not a node id like !a1b2c3d4`);
  return ids;
}

/** `--expires` (or the deprecated `--until`) as ms since the epoch; null when neither is given. */
export function expiresFrom(
  values: CliValues<typeof EXPIRES_OPTIONS>,
  usage: string,
  now: number,
): number | null {
  const given = values.expires ?? values.until;
  if (given === undefined) return null;
  const flag = values.expires !== undefined ? '--expires' : '--until';
  const at = parseUntil(given);
  if (at === undefined) {
    throw new UsageError(
      `${usage}: ${flag} expects a date like 2026-12-31 or an ISO date-time with an offset`,
    );
  }
  if (at <= now) throw new UsageError(`${usage}: ${flag} is in the past`);
  return at;
}

/** `2026-12-31` → the end of that UTC day; an ISO date-time with Z or an offset → that instant. */
export function parseUntil(value: string): number | undefined {
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) {
    const start = Date.parse(`${value}T00:00:00Z`);
    return Number.isNaN(start) || new Date(start).toISOString().slice(0, 10) !== value
      ? undefined
      : start + 86_400_000;
  }
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value)) return undefined;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : at;
}

function describe(s: Subscription, now: number): string {
  const scope = s.allNodes ? 'all nodes' : s.nodeIds.join(' ');
  const expired = s.expiresAt !== null && s.expiresAt <= now;
  const until = s.expiresAt === null ? 'no expiry' : `until ${new Date(s.expiresAt).toISOString()}`;
  const state = s.status === 'active' && expired ? 'expired' : s.status;
  return `#${s.id} ${s.subscriber} ${state} ${until} (${s.source}): ${scope}`;
}

export const runSubscriptionCommand = reportingErrors(subscriptionCommand);

async function subscriptionCommand(args: string[], ctx: CommandContext): Promise<number> {
  const { sub, rest } = pickSubcommand(args, GROUP);
  const command = SUBSCRIPTION_COMMANDS[sub];
  const { values, positionals } = parseCommand(rest, command as CliCommand<typeof GRANT.options>, ctx.err);
  const [who, ...extra] = positionals;
  const now = Date.now();
  if (sub === 'list') {
    if (extra.length) throw new UsageError(`${LIST.name}: expected at most one user name`);
    return withRepository(ctx, (repo) => {
      const subscriptions = repo.list(who);
      if (subscriptions.length === 0) ctx.out('no subscriptions\n');
      for (const s of subscriptions) ctx.out(`${describe(s, now)}\n`);
      return Promise.resolve(0);
    });
  }
  if (!who) throw new UsageError(`${command.name}: name a user`);
  const subscriber = who.startsWith(EXTERNAL_PRINCIPAL_PREFIX) ? who : who.toLowerCase();
  const nodes = nodesFrom(values, extra, command.name, ctx.err);
  if (sub === 'revoke') {
    return withRepository(ctx, (repo) => {
      if (nodes === 'all')
        ctx.out(`revoked ${repo.revokeAll(subscriber)} subscription(s) of ${subscriber}\n`);
      else {
        ctx.out(
          `removed ${repo.removeNodes(subscriber, nodes)} node(s) from the subscriptions of ${subscriber}\n`,
        );
        const stillAll = repo.list(subscriber).find((s) => s.allNodes && s.status === 'active');
        if (stillAll) ctx.out(`note: #${stillAll.id} still covers all nodes; revoke it with --nodes all\n`);
      }
      return Promise.resolve(0);
    });
  }
  const expiresAt = expiresFrom(values, GRANT.name, now);
  return withRepository(ctx, async (repo, db) => {
    if (
      !subscriber.startsWith(EXTERNAL_PRINCIPAL_PREFIX) &&
      !(await new HubUserService(db).get(subscriber))
    ) {
      throw new UsageError(`${GRANT.name}: no user "${subscriber}" (add it with meshhub user add)`, 1);
    }
    const created = repo.create({ subscriber, nodes, expiresAt, source: 'cli', at: now });
    ctx.out(`granted ${describe(created, now)}\n`);
    return 0;
  });
}

async function withRepository(
  ctx: CommandContext,
  fn: (repo: SubscriptionRepository, db: ReturnType<typeof openHubDatabase>) => Promise<number>,
): Promise<number> {
  const db = openHubDatabase(ctx);
  try {
    return await fn(new SubscriptionRepository(db), db);
  } finally {
    db.close();
  }
}
