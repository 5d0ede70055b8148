/**
 * Billing on the upstream, its settings and plans (docs/sync.md "Billing on the upstream"):
 * PLUGINS=billing takes the hub's BTCPAY_* / BILLING_* settings, checked with the upstream's own
 * and every problem reported at once, secrets never echoed; a plugin the upstream does not run is
 * refused by name; `meshhub upstream plan add|list|retire` manages the plans in PostgreSQL.
 */
import { describe, expect, it } from 'vitest';
import { runUpstreamPlanCommand } from '../../../sync/upstream/billing/plan-commands.js';
import { openPool } from '../../../sync/upstream/db/pool.js';
import { loadUpstreamSettings } from '../../../sync/upstream/settings.js';
import { configProblems } from '../../helpers/config.js';
import { createTestSchema, skipWithoutPostgres } from '../../helpers/postgres.js';

const DB = 'postgres://u:p@127.0.0.1:5432/db';

const problemsOf = (env: Record<string, string>) => configProblems(() => loadUpstreamSettings(env));

describe('upstream billing settings', () => {
  it('reports every billing problem with the upstream’s own, at once, without echoing secrets', () => {
    const problems = problemsOf({
      UPSTREAM_DATABASE_URL: DB,
      HTTP_PORT: 'eighty',
      PLUGINS: 'billing',
      BTCPAY_URL: 'http://10.0.0.5',
      BTCPAY_WEBHOOK_SECRET: 'short',
      BILLING_GRACE_HOURS: '-1',
    });
    const named = problems.map((p) => p.split(':')[0]).sort();
    expect(named).toEqual([
      'BILLING_GRACE_HOURS',
      'BTCPAY_API_KEY',
      'BTCPAY_STORE_ID',
      'BTCPAY_URL',
      'BTCPAY_WEBHOOK_SECRET',
      'HTTP_PORT',
    ]);
    expect(problems.join('\n')).not.toContain('short');
  });

  it('parses them as the hub does when they are right, and only with PLUGINS=billing', () => {
    const billing = {
      BTCPAY_URL: 'https://btcpay.example.org/',
      BTCPAY_STORE_ID: 'Store1',
      BTCPAY_API_KEY: 'key-key-key',
      BTCPAY_WEBHOOK_SECRET: 'secret-secret',
    };
    const on = loadUpstreamSettings({ UPSTREAM_DATABASE_URL: DB, PLUGINS: 'billing', ...billing });
    expect(on.PLUGINS).toEqual(['billing']);
    expect(on.billing).toMatchObject({ BTCPAY_STORE_ID: 'Store1', BILLING_GRACE_HOURS: 24 });
    expect(loadUpstreamSettings({ UPSTREAM_DATABASE_URL: DB, ...billing }).billing).toBeUndefined();
  });

  it('refuses a plugin the upstream does not run', () => {
    expect(problemsOf({ UPSTREAM_DATABASE_URL: DB, PLUGINS: 'audit' })).toEqual([
      'PLUGINS: "audit" does not run on the upstream (it runs: billing)',
    ]);
  });
});

const skip = await skipWithoutPostgres();

describe.skipIf(skip)('meshhub upstream plan', () => {
  it('adds, lists and retires plans in PostgreSQL, with the hub’s refusals', async () => {
    const schema = await createTestSchema('upplan');
    const out: string[] = [];
    const err: string[] = [];
    const ctx = {
      env: { UPSTREAM_DATABASE_URL: schema.url },
      stdin: process.stdin,
      out: (s: string) => out.push(s),
      err: (s: string) => err.push(s),
    };
    try {
      const add = [
        'add',
        'monthly',
        '--name',
        'Monthly',
        '--price',
        '5',
        '--currency',
        'usd',
        '--days',
        '30',
      ];
      expect(await runUpstreamPlanCommand(add, ctx)).toBe(0);
      const hut = 'add hut --name Hut --price 0.0001 --currency BTC --days 7 --nodes'.split(' ');
      // A node no site has reported is refused by name; once a site heard it, it is taken.
      expect(await runUpstreamPlanCommand([...hut, '!a1b2c3d4'], ctx)).toBe(1);
      expect(err.join('')).toContain(
        'meshhub upstream plan add: --nodes: never heard !a1b2c3d4 (at any site); name nodes it has heard, or all',
      );
      const pool = openPool(schema.url, { max: 1 });
      await pool.query(
        `INSERT INTO nodes (site_id, node_id, node_num, updated_at, received_at) VALUES ('north', '!a1b2c3d4', 2712847316, 0, 0)`,
      );
      await pool.end();
      expect(await runUpstreamPlanCommand([...hut, '!a1b2c3d4'], ctx)).toBe(0);
      expect(await runUpstreamPlanCommand(add, ctx)).toBe(2);
      expect(err.join('')).toContain('meshhub upstream plan: id: a plan "monthly" exists already');
      expect(
        await runUpstreamPlanCommand(
          ['add', 'p1', '--name', 'X', '--price', 'five', '--currency', 'USD', '--days', '1'],
          ctx,
        ),
      ).toBe(2);
      expect(err.join('')).toContain('price');
      expect(await runUpstreamPlanCommand(['retire', 'hut'], ctx)).toBe(0);
      expect(await runUpstreamPlanCommand(['retire', 'nope'], ctx)).toBe(1);
      out.length = 0;
      expect(await runUpstreamPlanCommand(['list'], ctx)).toBe(0);
      expect(out.join('')).toBe(
        'hut "Hut" 0.0001 BTC / 7 days, !a1b2c3d4 (retired)\nmonthly "Monthly" 5 USD / 30 days, all nodes\n',
      );
      expect(await runUpstreamPlanCommand(['frobnicate'], ctx)).toBe(2);
    } finally {
      await schema.drop();
    }
  });
});
