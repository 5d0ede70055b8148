/**
 * `meshhub plan add|list|retire`: the billing plugin's plans, on DATA_DIR's database (also while
 * the hub runs). The billing tables are created here when the plugin never ran yet.
 */
import { parseArgs } from 'node:util';
import {
  type CommandContext,
  openHubDatabase,
  reportError,
  UsageError,
} from '../../src/auth/cli-commands.js';
import { migrateComponent } from '../../src/store/component-migrations.js';
import { type Plan, PlanError, PlanRepository } from './plans.js';
import { BILLING_COMPONENT, BILLING_MIGRATIONS } from './schema.js';

export const PLAN_HELP = `Usage (billing plans, PLUGINS=billing):
  meshhub plan add <id> --name NAME --price PRICE --currency CUR --days N [--nodes all|!a1b2c3d4,...]
                        Offer a plan: PRICE is a decimal string (5, 0.0001), CUR a code BTCPay
                        knows (USD, EUR, BTC, SATS), N the paid period in days.
  meshhub plan list     Every plan, retired ones too.
  meshhub plan retire <id>
                        Stop offering a plan; subscriptions bought on it keep running.
`;

function describe(p: Plan): string {
  const nodes = p.nodes === 'all' ? 'all nodes' : p.nodes.join(' ');
  return `${p.id} "${p.name}" ${p.price} ${p.currency} / ${p.periodDays} days, ${nodes}${p.active ? '' : ' (retired)'}`;
}

export async function runPlanCommand(args: string[], ctx: CommandContext): Promise<number> {
  try {
    return planCommand(args, ctx);
  } catch (error) {
    if (error instanceof PlanError)
      return reportError(new UsageError(`meshhub plan: ${error.field}: ${error.message}`), ctx);
    return reportError(error, ctx);
  }
}

function planCommand(args: string[], ctx: CommandContext): number {
  const [sub, ...rest] = args;
  if (sub !== 'add' && sub !== 'list' && sub !== 'retire') {
    throw new UsageError(`meshhub plan: unknown subcommand "${sub ?? ''}"\n\n${PLAN_HELP}`);
  }
  const { values, positionals } = parseArgs({
    args: rest,
    options: {
      name: { type: 'string' },
      price: { type: 'string' },
      currency: { type: 'string' },
      days: { type: 'string' },
      nodes: { type: 'string', default: 'all' },
    },
    allowPositionals: true,
    strict: true,
  });
  const db = openHubDatabase(ctx.dataDir);
  try {
    migrateComponent(db, BILLING_COMPONENT, BILLING_MIGRATIONS);
    const plans = new PlanRepository(db);
    if (sub === 'list') {
      const all = plans.list();
      if (!all.length) ctx.out('no plans\n');
      for (const p of all) ctx.out(`${describe(p)}\n`);
      return 0;
    }
    const [id] = positionals;
    if (!id) throw new UsageError(`meshhub plan ${sub}: name a plan id`);
    if (sub === 'retire') {
      if (!plans.get(id)) throw new UsageError(`meshhub plan retire: no plan "${id}"`, 1);
      ctx.out(plans.retire(id) ? `retired ${id}\n` : `${id} was retired already\n`);
      return 0;
    }
    const missing = (['name', 'price', 'currency', 'days'] as const).filter((k) => values[k] === undefined);
    if (missing.length)
      throw new UsageError(`meshhub plan add: give ${missing.map((k) => `--${k}`).join(', ')}`);
    const days = Number(values.days);
    const plan = plans.add({
      id,
      name: values.name!,
      price: values.price!,
      currency: values.currency!.toUpperCase(),
      periodDays: Number.isInteger(days) ? days : Number.NaN,
      nodes: values.nodes === 'all' ? 'all' : values.nodes!.split(',').map((n) => n.trim()),
    });
    ctx.out(`added ${describe(plan)}\n`);
    return 0;
  } finally {
    db.close();
  }
}
