/**
 * `meshhub plan add|list|retire`: the billing plugin's plans, on DATA_DIR's database (also while
 * the hub runs). The billing tables are created here when the plugin never ran yet.
 * `meshhub upstream plan …` runs the same commands (`planCommandOn`) on the upstream's PostgreSQL
 * (sync/upstream/billing/plan-commands.ts).
 *
 * `plan add --nodes` takes only nodes the hub has heard (the upstream: heard at any site): a plan
 * for a mistyped id could be bought and never used.
 */
import { type CommandContext, openHubDatabase, reportError } from '../auth/cli-commands.js';
import {
  type CliCommand,
  type CliIo,
  parseCommand,
  pickSubcommand,
  stringOptions,
  UsageError,
} from '../kernel/cli-args.js';
import { migrateComponent } from '../store/component-migrations.js';
import { NodeRepository } from '../store/nodes-repository.js';
import type { PlanStorage } from './billing-storage.js';
import { checkNewPlan, type Plan, PlanError } from './plans.js';
import { BILLING_COMPONENT, BILLING_MIGRATIONS } from './sqlite-schema.js';
import { SqliteBillingStorage } from './sqlite-storage.js';

/** The plan commands' words under `prefix` (`meshhub plan`, `meshhub upstream plan`). */
export function planCommands(prefix: string) {
  const add = {
    name: `${prefix} add`,
    help: `  ${prefix} add <id> --name NAME --price PRICE --currency CUR --days N [--nodes all|!a1b2c3d4,...]
                        Offer a plan: PRICE is a decimal string (5, 0.0001), CUR a code BTCPay
                        knows (USD, EUR, BTC, SATS), N the paid period in days; --nodes (default
                        all) names nodes this ${prefix.includes('upstream') ? 'upstream (any site)' : 'hub'} has heard.
`,
    options: stringOptions('name', 'price', 'currency', 'days', 'nodes'),
  } satisfies CliCommand;
  const list = {
    name: `${prefix} list`,
    help: `  ${prefix} list
                        Every plan, retired ones too.
`,
    options: {},
    positionals: false,
  } satisfies CliCommand;
  const retire = {
    name: `${prefix} retire`,
    help: `  ${prefix} retire <id>
                        Stop offering a plan; subscriptions bought on it keep running.
`,
    options: {},
  } satisfies CliCommand;
  const commands = { add, list, retire };
  const help = Object.values(commands)
    .map((c) => c.help)
    .join('');
  return {
    commands,
    group: { name: prefix, help, subcommands: Object.keys(commands) as Array<keyof typeof commands> },
  };
}

export const PLAN_HELP = `Usage (billing plans, PLUGINS=billing):\n${planCommands('meshhub plan').group.help}`;

function describe(p: Plan): string {
  const nodes = p.nodes === 'all' ? 'all nodes' : p.nodes.join(' ');
  return `${p.id} "${p.name}" ${p.price} ${p.currency} / ${p.periodDays} days, ${nodes}${p.active ? '' : ' (retired)'}`;
}

/** What the plan commands work on: the plans, which node ids were never heard, and a close. */
export interface PlanPlace {
  plans: PlanStorage;
  /** The ids of `nodeIds` never heard (by this hub; upstream: at any site). */
  unheard: (nodeIds: readonly string[]) => Promise<string[]>;
  close: () => Promise<void>;
}

export async function runPlanCommand(args: string[], ctx: CommandContext): Promise<number> {
  try {
    return await planCommandOn(
      args,
      async () => {
        const db = openHubDatabase(ctx);
        migrateComponent(db, BILLING_COMPONENT, BILLING_MIGRATIONS);
        const nodes = new NodeRepository(db);
        return {
          plans: new SqliteBillingStorage(db).plans,
          unheard: async (ids) => ids.filter((id) => nodes.get(id) === undefined),
          close: async () => {
            db.close();
          },
        };
      },
      ctx,
    );
  } catch (error) {
    return reportError(error, ctx);
  }
}

/**
 * `plan add|list|retire` on the place `open` gives (closed after). `prefix` names the command in
 * messages. Throws UsageError (a PlanError becomes one, naming the field) and HelpRequested.
 */
export async function planCommandOn(
  args: string[],
  open: () => Promise<PlanPlace>,
  io: CliIo,
  prefix = 'meshhub plan',
): Promise<number> {
  const { commands, group } = planCommands(prefix);
  const { sub, rest } = pickSubcommand(args, group);
  const { values, positionals } = parseCommand(rest, commands[sub] as typeof commands.add, io.err);
  const [id, ...more] = positionals;
  if (sub !== 'list' && (!id || more.length)) throw new UsageError(`${prefix} ${sub}: name one plan id`);
  let nodes: 'all' | string[] = 'all';
  if (sub === 'add') {
    const missing = (['name', 'price', 'currency', 'days'] as const).filter((k) => values[k] === undefined);
    if (missing.length)
      throw new UsageError(`${prefix} add: give ${missing.map((k) => `--${k}`).join(', ')}`);
    const given = values.nodes?.trim() ?? 'all';
    if (given !== 'all') nodes = given.split(',').map((n) => n.trim());
  }
  const { plans, unheard, close } = await open();
  try {
    if (sub === 'list') {
      const all = await plans.list();
      if (!all.length) io.out('no plans\n');
      for (const p of all) io.out(`${describe(p)}\n`);
      return 0;
    }
    if (sub === 'retire') {
      if (!(await plans.get(id!))) throw new UsageError(`${prefix} retire: no plan "${id}"`, 1);
      io.out((await plans.retire(id!)) ? `retired ${id}\n` : `${id} was retired already\n`);
      return 0;
    }
    const days = Number(values.days);
    const plan = {
      id: id!,
      name: values.name!,
      price: values.price!,
      currency: values.currency!.toUpperCase(),
      periodDays: Number.isInteger(days) ? days : Number.NaN,
      nodes,
    };
    // Checked as add checks it (a malformed id is named first), then against the nodes heard.
    checkNewPlan(plan);
    if (nodes !== 'all') {
      const never = await unheard(nodes);
      if (never.length) {
        throw new UsageError(
          `${prefix} add: --nodes: never heard ${never.join(', ')} (${prefix.includes('upstream') ? 'at any site' : 'by this hub'}); name nodes it has heard, or all`,
          1,
        );
      }
    }
    io.out(`added ${describe(await plans.add(plan))}\n`);
    return 0;
  } catch (error) {
    if (error instanceof PlanError) throw new UsageError(`${prefix}: ${error.field}: ${error.message}`);
    throw error;
  } finally {
    await close();
  }
}
