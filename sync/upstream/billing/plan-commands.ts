/**
 * `meshhub upstream plan add|list|retire`: the hub's plan commands (src/billing/
 * plan-commands.ts) on the upstream's PostgreSQL (UPSTREAM_DATABASE_URL, migrated first), also
 * while upstream processes run; `plan add --nodes` takes nodes heard at any site. Exit codes as
 * the other upstream commands: 0 done, 1 refused or database unreachable, 2 usage.
 */

import { planCommandOn, planCommands } from '../../../src/billing/plan-commands.js';
import { openMigratedPool, reportUpstreamError, type UpstreamCommandContext } from '../commands.js';
import { PgPlans } from './pg-storage.js';

const PREFIX = 'meshhub upstream plan';

/** `meshhub upstream plan`'s subcommands, as `meshhub --help` lists them. */
export const UPSTREAM_PLAN_HELP = `Usage (billing plans on the upstream, PLUGINS=billing there):\n${planCommands(PREFIX).group.help}`;

export async function runUpstreamPlanCommand(args: string[], ctx: UpstreamCommandContext): Promise<number> {
  try {
    return await planCommandOn(
      args,
      async () => {
        const pool = await openMigratedPool(ctx);
        return {
          plans: new PgPlans(pool),
          unheard: async (ids) => {
            const { rows } = await pool.query<{ node_id: string }>(
              'SELECT DISTINCT node_id FROM nodes WHERE node_id = ANY($1)',
              [ids],
            );
            const heard = new Set(rows.map((r) => r.node_id));
            return ids.filter((id) => !heard.has(id));
          },
          close: () => pool.end(),
        };
      },
      ctx,
      PREFIX,
    );
  } catch (error) {
    return reportUpstreamError(error, ctx, PREFIX);
  }
}
