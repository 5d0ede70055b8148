/**
 * `meshhub upstream plan add|list|retire`: the hub's plan commands (src/billing/
 * plan-commands.ts) on the upstream's PostgreSQL (UPSTREAM_DATABASE_URL, migrated first), also
 * while upstream processes run. Exit codes as the other upstream commands: 0 done, 1 refused or
 * database unreachable, 2 usage.
 */

import { UsageError } from '../../../src/auth/cli-commands.js';
import { PLAN_HELP, planCommandOn } from '../../../src/billing/plan-commands.js';
import { ConfigError } from '../../../src/config/load.js';
import type { UpstreamCommandContext } from '../commands.js';
import { migrateUpstream } from '../db/migrate.js';
import { isTransientDatabaseError, openPool } from '../db/pool.js';
import { loadUpstreamDatabaseSettings } from '../settings.js';
import { PgPlans } from './pg-storage.js';

export const UPSTREAM_PLAN_HELP = `Usage (billing plans on the upstream, PLUGINS=billing there):
  meshhub upstream plan add|list|retire …
                        As \`meshhub plan\` (below), on the upstream's PostgreSQL.
`;

export async function runUpstreamPlanCommand(args: string[], ctx: UpstreamCommandContext): Promise<number> {
  const prefix = 'meshhub upstream plan';
  try {
    return await planCommandOn(
      args,
      async () => {
        const settings = loadUpstreamDatabaseSettings(ctx.env);
        const pool = openPool(settings.UPSTREAM_DATABASE_URL.reveal(), { max: 2 });
        try {
          await migrateUpstream(pool);
        } catch (error) {
          await pool.end();
          throw error;
        }
        return { plans: new PgPlans(pool), close: () => pool.end() };
      },
      ctx.out,
      prefix,
    );
  } catch (error) {
    if (error instanceof UsageError) {
      ctx.err(`${error.message.replace(PLAN_HELP, UPSTREAM_PLAN_HELP + PLAN_HELP)}\n`);
      return error.exitCode;
    }
    if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      ctx.err(`${prefix}: ${(error as Error).message}\n`);
      return 2;
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
}
