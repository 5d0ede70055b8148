/**
 * Every `meshhub` command and subcommand, as a real process (the built CLI): `--help` prints its
 * own usage on stdout and exits 0 having started nothing (the process ends by itself with its
 * stdin left open, DATA_DIR is not created, PostgreSQL is not asked); an unknown option or
 * subcommand gives one plain line naming the valid ones, exit 2, no stack trace. The lists below
 * are checked against what each group itself names, so a new subcommand cannot go untested.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtCliScratch, type CliResult, meshhubCli } from '../helpers/cli.js';

/** Each group's words and its subcommands; `[]` is `meshhub` itself. */
const GROUPS: Array<[string[], string[]]> = [
  [
    [],
    'start sim user token subscription plan backup restore sync upstream tiles mcp version help'.split(' '),
  ],
  [['user'], ['add', 'list', 'roles', 'passwd', 'remove']],
  [['subscription'], ['grant', 'revoke', 'list']],
  [['plan'], ['add', 'list', 'retire']],
  [['sync'], ['status', 'key']],
  [['tiles'], ['extract']],
  [['upstream'], ['serve', 'migrate', 'site', 'user', 'subscription', 'plan']],
  [
    ['upstream', 'site'],
    ['add', 'list', 'revoke'],
  ],
  [
    ['upstream', 'user'],
    ['add', 'list', 'passwd', 'revoke', 'disable', 'enable'],
  ],
  [['upstream', 'subscription'], ['grant']],
  [
    ['upstream', 'plan'],
    ['add', 'list', 'retire'],
  ],
];

/** Every command that does something: each group's subcommands that are not groups themselves. */
const LEAVES: string[][] = [
  ...GROUPS.flatMap(([words, subs]) =>
    subs
      .map((sub) => [...words, sub])
      .filter((leaf) => !GROUPS.some(([group]) => group.join(' ') === leaf.join(' '))),
  ),
  ['token', 'revoke'],
];

const root = builtCliScratch('meshhub-cli-help-');
const dataDir = join(root, 'data');

type Result = CliResult;

/** `meshhub …args` with stdin left open (a command that waits for input or serves never ends). */
function meshhub(args: string[]): Promise<Result> {
  return meshhubCli(args, {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: root,
      DATA_DIR: dataDir,
      HTTP_PORT: '0',
      MESH_API_PORT: '0',
      MQTT_PORT: '0',
      RADIO: 'none',
      LOG_LEVEL: 'info',
      // A port nothing listens on: a command that reached PostgreSQL would fail, not exit 0.
      UPSTREAM_DATABASE_URL: 'postgres://meshhub:meshhub@127.0.0.1:1/none',
    },
  });
}

/** Runs `fn` over `items`, two at a time (the machine is shared). */
async function each<T>(items: T[], fn: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    [0, 1].map(async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await fn(item);
    }),
  );
}

/** One plain line on stderr: no stack frames, no Node error names. */
function expectOneLine(res: Result, args: string[]): void {
  expect({ args, lines: res.err.split('\n').length }).toEqual({ args, lines: 2 });
  expect(res.err).not.toMatch(/\n\s+at |ERR_PARSE_ARGS|TypeError|Error:/);
}

/**
 * `meshhub …args`, checked to have ended by itself (not killed) with nothing created in
 * DATA_DIR, with exit `code`, and nothing on the other stream than the one it answers on.
 */
async function answer(args: string[], code: 0 | 2): Promise<Result> {
  const res = await meshhub(args);
  expect({ args, killed: res.code === null }).toEqual({ args, killed: false });
  expect({ args, created: existsSync(dataDir) }).toEqual({ args, created: false });
  const quiet = code === 0 ? { err: res.err } : { out: res.out };
  expect({ args, code: res.code, ...quiet }).toEqual({
    args,
    code,
    ...(code === 0 ? { err: '' } : { out: '' }),
  });
  return res;
}

describe('meshhub … --help', () => {
  it('the lists above are every group and subcommand there is', async () => {
    await each(GROUPS, async ([words, subs]) => {
      const res = await meshhub([...words, 'frobnicate']);
      const named = /use one of: (.+) \(or --help\)$/.exec(res.err.trim())?.[1];
      expect({ words, named }).toEqual({ words, named: subs.join(', ') });
    });
  }, 300_000);

  it('every command answers --help with its own usage on stdout, exit 0, and starts nothing', async () => {
    await each(LEAVES, async (leaf) => {
      const res = await answer([...leaf, '--help'], 0);
      expect(res.out).toMatch(/^Usage:\n {2}meshhub /);
      // Its own usage: the line that names it comes first (`upstream serve` is `meshhub upstream [serve]`).
      const words = leaf[0] === 'help' ? 'meshhub help' : `meshhub ${leaf.join(' ')}`;
      expect(res.out.replace('[serve]', 'serve')).toContain(`  ${words}`);
    });
  }, 600_000);

  it('-h and `help` do the same; every group lists its subcommands', async () => {
    const cases = GROUPS.flatMap(([words]) => [
      [...words, '-h'],
      [...words, 'help'],
    ]);
    await each(cases, async (args) => {
      const res = await answer(args, 0);
      const group = GROUPS.find(([words]) => words.join(' ') === args.slice(0, -1).join(' '))!;
      for (const sub of group[1])
        expect({ args, sub, listed: new RegExp(`\\b${sub}\\b`).test(res.out) }).toEqual({
          args,
          sub,
          listed: true,
        });
    });
    // The README's form, `meshhub help <command>`.
    const res = await meshhub(['help', 'user', 'add']);
    expect(res).toMatchObject({ code: 0, err: '' });
    expect(res.out).toMatch(/^Usage:\n {2}meshhub user add <name>/);
  }, 600_000);

  it('an unknown option gives one line naming the valid ones, exit 2, and starts nothing', async () => {
    await each(LEAVES, async (leaf) => {
      const args = [...leaf, '--frobnicate'];
      const res = await answer(args, 2);
      expectOneLine(res, args);
      expect(res.err).toMatch(
        /^meshhub[\w -]*: unknown option --frobnicate; (valid options: .*--help|it takes no options but --help)\n$/,
      );
    });
    // A few by their whole line: the flags are named.
    expect((await meshhub(['sim', '--bogus'])).err).toBe(
      'meshhub sim: unknown option --bogus; valid options: --host, --port, --nodes, --backfill, --interval, --seed, --help\n',
    );
    expect((await meshhub(['user', 'add', 'ana', '--bogus'])).err).toBe(
      'meshhub user add: unknown option --bogus; valid options: --roles, --password-stdin, --help\n',
    );
    expect((await meshhub(['start', '--port', '80'])).err).toBe(
      'meshhub start: unknown option --port; it takes no options but --help\n',
    );
  }, 600_000);

  it('an unknown subcommand, none at all, or a missing value is one line too', async () => {
    const cases: Array<[string[], string]> = [
      [['user'], 'meshhub user: name a subcommand: add, list, roles, passwd, remove (or --help)\n'],
      [
        ['plan', '--bogus'],
        'meshhub plan: unknown option --bogus; use one of: add, list, retire (or --help)\n',
      ],
      [
        ['upstream', 'site', 'rename'],
        'meshhub upstream site: unknown subcommand "rename"; use one of: add, list, revoke (or --help)\n',
      ],
      [
        ['token', 'ana', '--ttl'],
        'meshhub token: --ttl needs a value (write --ttl=VALUE for a value that starts with -)\n',
      ],
      [
        ['version', 'extra'],
        'meshhub version: unexpected argument "extra"; it takes no options but --help\n',
      ],
    ];
    await each(cases, async ([args, line]) => {
      expect({ args, err: (await answer(args, 2)).err }).toEqual({ args, err: line });
    });
  }, 300_000);
});
