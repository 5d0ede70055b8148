/**
 * `meshhub subscription grant|revoke|list`: run against DATA_DIR's database, also while the hub
 * runs. `--until 2026-12-31` means through that day (UTC): the subscription ends at the next
 * midnight UTC; a date-time with an offset is taken as given.
 */
import { parseArgs } from 'node:util';
import { type CommandContext, openHubDatabase, reportingErrors, UsageError } from '../auth/cli-commands.js';
import { EXTERNAL_PRINCIPAL_PREFIX } from '../auth/hub-identity.js';
import { HubUserService } from '../auth/user-service.js';
import { type Subscription, SubscriptionRepository } from './subscription-repository.js';
import { NODE_ID_PATTERN } from './validation.js';

export const SUBSCRIPTION_HELP = `Usage:
  meshhub subscription grant <user> (--all | <node_id>...) [--until DATE]
                        Let a user message every node of the site (--all) or the nodes named
                        (!a1b2c3d4 ...), until DATE (2026-12-31, or 2026-12-31T18:00:00+01:00).
                        <user> is a local user, or idp:<sub> for an identity-provider user.
  meshhub subscription revoke <user> (--all | <node_id>...)
                        Revoke all of the user's subscriptions, or take nodes out of them.
  meshhub subscription list [<user>]
`;

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
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    options: { all: { type: 'boolean', default: false }, until: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  if (sub !== 'grant' && sub !== 'revoke' && sub !== 'list') {
    throw new UsageError(`meshhub subscription: unknown subcommand "${sub ?? ''}"\n\n${SUBSCRIPTION_HELP}`);
  }
  const [who, ...nodes] = positionals;
  const now = Date.now();
  const db = openHubDatabase(ctx.dataDir);
  try {
    const repo = new SubscriptionRepository(db);
    if (sub === 'list') {
      const subscriptions = repo.list(who);
      if (subscriptions.length === 0) ctx.out('no subscriptions\n');
      for (const s of subscriptions) ctx.out(`${describe(s, now)}\n`);
      return 0;
    }
    if (!who) throw new UsageError(`meshhub subscription ${sub}: name a user`);
    const subscriber = who.startsWith(EXTERNAL_PRINCIPAL_PREFIX) ? who : who.toLowerCase();
    if (values.all === nodes.length > 0) {
      throw new UsageError(`meshhub subscription ${sub}: give either --all or node ids like !a1b2c3d4`);
    }
    const bad = nodes.find((n) => !NODE_ID_PATTERN.test(n));
    if (bad !== undefined)
      throw new UsageError(`meshhub subscription ${sub}: "${bad}" is not a node id like !a1b2c3d4`);
    if (sub === 'revoke') {
      if (values.until !== undefined)
        throw new UsageError('meshhub subscription revoke: --until is only for grant');
      if (values.all) ctx.out(`revoked ${repo.revokeAll(subscriber)} subscription(s) of ${subscriber}\n`);
      else {
        ctx.out(
          `removed ${repo.removeNodes(subscriber, nodes)} node(s) from the subscriptions of ${subscriber}\n`,
        );
        const stillAll = repo.list(subscriber).find((s) => s.allNodes && s.status === 'active');
        if (stillAll) ctx.out(`note: #${stillAll.id} still covers all nodes; revoke it with --all\n`);
      }
      return 0;
    }
    if (
      !subscriber.startsWith(EXTERNAL_PRINCIPAL_PREFIX) &&
      !(await new HubUserService(db).get(subscriber))
    ) {
      throw new UsageError(
        `meshhub subscription grant: no user "${subscriber}" (add it with meshhub user add)`,
        1,
      );
    }
    let expiresAt: number | null = null;
    if (values.until !== undefined) {
      const until = parseUntil(values.until);
      if (until === undefined) {
        throw new UsageError(
          'meshhub subscription grant: --until expects a date like 2026-12-31 or an ISO date-time',
        );
      }
      if (until <= now) throw new UsageError('meshhub subscription grant: --until is in the past');
      expiresAt = until;
    }
    const created = repo.create({
      subscriber,
      nodes: values.all ? 'all' : nodes,
      expiresAt,
      source: 'cli',
      at: now,
    });
    ctx.out(`granted ${describe(created, now)}\n`);
    return 0;
  } finally {
    db.close();
  }
}
