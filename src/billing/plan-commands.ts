/**
 * `meshhub plan add|list|retire`: the billing plugin's plans, on DATA_DIR's database (also while
 * the hub runs). The billing tables are created here when the plugin never ran yet.
 * `meshhub upstream plan …` runs the same commands (`planCommandOn`) on the upstream's PostgreSQL
 * (sync/upstream/billing/plan-commands.ts).
 */
import { parseArgs } from 'node:util';
import { type CommandContext, openHubDatabase, reportError, UsageError } from '../auth/cli-commands.js';
import { migrateComponent } from '../store/component-migrations.js';
import type { PlanStorage } from './billing-storage.js';
import { type Plan, PlanError } from './plans.js';
import { BILLING_COMPONENT, BILLING_MIGRATIONS } from './sqlite-schema.js';
import { SqliteBillingStorage } from './sqlite-storage.js';

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
    return await planCommandOn(
      args,
      async () => {
        const db = openHubDatabase(ctx.dataDir);
        migrateComponent(db, BILLING_COMPONENT, BILLING_MIGRATIONS);
        return {
          plans: new SqliteBillingStorage(db).plans,
          close: async () => {
            db.close();
          },
        };
      },
      ctx.out,
    );
  } catch (error) {
    return reportError(error, ctx);
  }
}

/**
 * `plan add|list|retire` on the plans `open` gives (closed after). `prefix` names the command in
 * messages. Throws UsageError (a PlanError becomes one, naming the field).
 */
export async function planCommandOn(
  args: string[],
  open: () => Promise<{ plans: PlanStorage; close: () => Promise<void> }>,
  out: (text: string) => void,
  prefix = 'meshhub plan',
): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'add' && sub !== 'list' && sub !== 'retire') {
    throw new UsageError(`${prefix}: unknown subcommand "${sub ?? ''}"\n\n${PLAN_HELP}`);
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
  const [id] = positionals;
  if (sub !== 'list' && !id) throw new UsageError(`${prefix} ${sub}: name a plan id`);
  if (sub === 'add') {
    const missing = (['name', 'price', 'currency', 'days'] as const).filter((k) => values[k] === undefined);
    if (missing.length)
      throw new UsageError(`${prefix} add: give ${missing.map((k) => `--${k}`).join(', ')}`);
  }
  const { plans, close } = await open();
  try {
    if (sub === 'list') {
      const all = await plans.list();
      if (!all.length) out('no plans\n');
      for (const p of all) out(`${describe(p)}\n`);
      return 0;
    }
    if (sub === 'retire') {
      if (!(await plans.get(id!))) throw new UsageError(`${prefix} retire: no plan "${id}"`, 1);
      out((await plans.retire(id!)) ? `retired ${id}\n` : `${id} was retired already\n`);
      return 0;
    }
    const days = Number(values.days);
    const plan = await plans.add({
      id: id!,
      name: values.name!,
      price: values.price!,
      currency: values.currency!.toUpperCase(),
      periodDays: Number.isInteger(days) ? days : Number.NaN,
      nodes: values.nodes === 'all' ? 'all' : values.nodes!.split(',').map((n) => n.trim()),
    });
    out(`added ${describe(plan)}\n`);
    return 0;
  } catch (error) {
    if (error instanceof PlanError) throw new UsageError(`${prefix}: ${error.field}: ${error.message}`);
    throw error;
  } finally {
    await close();
  }
}
