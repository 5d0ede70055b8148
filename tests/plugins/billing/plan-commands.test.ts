/** `meshhub plan add|list|retire` on a data directory's database, with the errors a user sees. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { runPlanCommand } from '../../../src/billing/plan-commands.js';

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
  dataDir = mkdtempSync(join(tmpdir(), 'meshhub-plan-'));
  out = [];
  err = [];
});
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

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
