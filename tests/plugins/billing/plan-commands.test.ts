/** `meshhub plan add|list|retire` on a data directory's database, with the errors a user sees. */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { runPlanCommand } from '../../../src/billing/plan-commands.js';
import { closeDatabase, openDatabase } from '../../../src/store/database.js';
import { NodeRepository } from '../../../src/store/nodes-repository.js';

let root: string;
let dataDir: string;
let out: string[];
let err: string[];
const ctx = () => ({
  dataDir,
  stdin: process.stdin,
  out: (s: string) => out.push(s),
  err: (s: string) => err.push(s),
});

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'meshhub-plan-'));
  dataDir = root;
  // The hub ran here and heard one node.
  const db = openDatabase(join(dataDir, 'meshhub.sqlite'));
  new NodeRepository(db).upsert({ nodeNum: 0xa1b2c3d4, nodeId: '!a1b2c3d4', shortName: 'HUT' });
  closeDatabase(db);
  out = [];
  err = [];
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

it('adds, lists and retires plans', async () => {
  const add = ['add', 'monthly', '--name', 'Monthly', '--price', '5', '--currency', 'usd', '--days', '30'];
  expect(await runPlanCommand(add, ctx())).toBe(0);
  expect(
    await runPlanCommand(
      'add hut --name Hut --price 0.0001 --currency BTC --days 7 --nodes !a1b2c3d4'.split(' '),
      ctx(),
    ),
  ).toBe(0);
  expect(await runPlanCommand(['retire', 'hut'], ctx())).toBe(0);
  out = [];
  expect(await runPlanCommand(['list'], ctx())).toBe(0);
  expect(out.join('')).toBe(
    'hut "Hut" 0.0001 BTC / 7 days, !a1b2c3d4 (retired)\nmonthly "Monthly" 5 USD / 30 days, all nodes\n',
  );
  expect(err.join('')).toMatch(/^meshhub: using database \S+meshhub.sqlite \(DATA_DIR\)\n/);
});

it('refuses bad input with a reason and a non-zero exit', async () => {
  const base = ['--name', 'X', '--currency', 'USD', '--days', '30'];
  expect(await runPlanCommand(['add', 'p1', ...base, '--price', 'five'], ctx())).not.toBe(0);
  expect(err.join('')).toContain('price');
  expect(await runPlanCommand(['add', 'p1', ...base, '--price', '5', '--nodes', 'abc'], ctx())).not.toBe(0);
  expect(err.join('')).toContain('not a node id');
  expect(await runPlanCommand(['add', 'p1', '--name', 'X'], ctx())).not.toBe(0);
  expect(err.join('')).toContain('--price');
  expect(await runPlanCommand(['retire', 'nope'], ctx())).not.toBe(0);
  expect(await runPlanCommand(['frobnicate'], ctx())).not.toBe(0);
  out = [];
  await runPlanCommand(['list'], ctx());
  expect(out.join('')).toBe('no plans\n');
});

it('refuses a node the hub has never heard, naming it, and adds nothing', async () => {
  const add = 'add hut --name Hut --price 5 --currency USD --days 7 --nodes'.split(' ');
  expect(await runPlanCommand([...add, '!a1b2c3d4,!0badc0de,!00000001'], ctx())).toBe(1);
  expect(err.at(-1)).toBe(
    'meshhub plan add: --nodes: never heard !0badc0de, !00000001 (by this hub); name nodes it has heard, or all\n',
  );
  out = [];
  await runPlanCommand(['list'], ctx());
  expect(out.join('')).toBe('no plans\n');
});

it('refuses a data directory without a hub database, and creates none', async () => {
  dataDir = join(dataDir, 'elsewhere');
  expect(await runPlanCommand(['list'], ctx())).toBe(1);
  expect(err).toEqual([
    `meshhub: no hub database at ${join(dataDir, 'meshhub.sqlite')} (DATA_DIR); set DATA_DIR to the running hub's data directory\n`,
  ]);
  expect(existsSync(dataDir)).toBe(false);
});
