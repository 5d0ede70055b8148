/**
 * The CLI's data directory, as a person meets it through the built `meshhub` (issue 25): each
 * command that opens the hub's database names it on stderr; a DATA_DIR without one is refused,
 * not filled with an empty database (only `user add` creates it, and says so); stdout carries
 * only what a script captures (`TOKEN=$(meshhub token alice)`, `meshhub sync key > file`), and
 * `sync status` prints one field a line.
 */
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { builtCliScratch, type CliResult, meshhubCli } from '../helpers/cli.js';

const PASSWORD = 'a-long-field-password';

const root = builtCliScratch('meshhub-cli-data-');

function meshhub(
  args: string[],
  options: { env?: Record<string, string>; stdin?: string; cwd?: string } = {},
): Promise<CliResult> {
  return meshhubCli(args, {
    cwd: options.cwd ?? root,
    env: { PATH: process.env.PATH ?? '', HOME: root, ...options.env },
    stdin: options.stdin ?? '',
  });
}

describe('a DATA_DIR without a hub database', () => {
  it('is refused by every command that reads it, in one line naming the file, and nothing is created', async () => {
    const dataDir = join(root, 'wrong-place');
    const env = { DATA_DIR: dataDir, SYNC_UPSTREAM_URL: 'https://upstream.example', SYNC_SITE_ID: 'north' };
    const file = join(dataDir, 'meshhub.sqlite');
    const refusal = `meshhub: no hub database at ${file} (DATA_DIR); set DATA_DIR to the running hub's data directory\n`;
    const commands = [
      ['user', 'list'],
      ['user', 'remove', 'alice'],
      ['user', 'roles', 'alice', '--roles', 'admin'],
      ['token', 'alice'],
      ['token', 'revoke', 'alice'],
      ['subscription', 'list'],
      ['subscription', 'grant', 'alice', '--nodes', 'all'],
      ['plan', 'list'],
      ['sync', 'status'],
    ];
    for (const args of commands) {
      const res = await meshhub(args, { env });
      expect({ args, ...res }).toEqual({ args, code: 1, out: '', err: refusal });
    }
    // `meshhub mcp` too, after its security warning.
    const mcp = await meshhub(['mcp'], { env });
    expect(mcp).toMatchObject({ code: 1, out: '' });
    expect(mcp.err.split('\n').slice(1).join('\n')).toBe(refusal);
    expect(existsSync(dataDir)).toBe(false);
  }, 300_000);

  it('`user add` creates it on a fresh install and says so; the default ./data is named as such', async () => {
    const cwd = join(root, 'fresh');
    mkdirSync(cwd);
    const res = await meshhub(['user', 'add', 'alice', '--password-stdin'], { cwd, stdin: `${PASSWORD}\n` });
    expect(res).toEqual({
      code: 0,
      out: 'created user alice (subscriber)\n',
      err: `meshhub: created a new database ${join(cwd, 'data', 'meshhub.sqlite')} (DATA_DIR is unset: the default ./data)\n`,
    });
    expect(readdirSync(join(cwd, 'data'))).toContain('meshhub.sqlite');
  }, 120_000);
});

describe('output meant for capture', () => {
  let dataDir: string;
  const env = () => ({ DATA_DIR: dataDir, LOG_LEVEL: 'debug' });

  beforeAll(async () => {
    dataDir = join(root, 'hub');
    const added = await meshhub(['user', 'add', 'ana', '--password-stdin'], {
      env: env(),
      stdin: PASSWORD,
    });
    expect(added.code).toBe(0);
  }, 120_000);

  it('token: stdout is the token alone; which database on stderr', async () => {
    const res = await meshhub(['token', 'ana', '--ttl', '2h'], { env: env() });
    expect(res.code).toBe(0);
    expect(res.out).toMatch(/^ey[\w-]+\.[\w-]+\.[\w-]+\n$/);
    expect(decodeJwt(res.out.trim())).toMatchObject({ sub: 'ana' });
    expect(res.err).toBe(`meshhub: using database ${join(dataDir, 'meshhub.sqlite')} (DATA_DIR)\n`);
  }, 120_000);

  it('sync key: stdout is the JWK set alone; which key file on stderr', async () => {
    const res = await meshhub(['sync', 'key'], { env: env() });
    expect(res.code).toBe(0);
    expect(JSON.parse(res.out).keys).toHaveLength(1);
    // The key was made by `token` above, or is made here on first use.
    expect(res.err).toMatch(
      /^meshhub: (using|created a new) signing key \S+jwt-signing-key.json \(DATA_DIR\)/,
    );
  }, 120_000);

  it('version and user list print only their answer on stdout', async () => {
    const version = await meshhub(['--version'], { env: env() });
    expect(version).toMatchObject({ code: 0, err: '' });
    expect(version.out).toMatch(/^\d+\.\d+\.\d+\S*\n$/);
    const list = await meshhub(['user', 'list'], { env: env() });
    expect(list.code).toBe(0);
    expect(list.out).toMatch(/^ana\s+subscriber\s+created \S+\n$/);
  }, 120_000);

  it('sync status: one aligned `label: value` a line; unconfigured, only that', async () => {
    const res = await meshhub(['sync', 'status'], {
      env: { ...env(), SYNC_UPSTREAM_URL: 'https://upstream.example', SYNC_SITE_ID: 'north' },
    });
    expect(res.code).toBe(0);
    const lines = res.out.trimEnd().split('\n');
    expect(lines).toEqual([
      'upstream:       https://upstream.example',
      'site:           north',
      'outbox:         none yet: sync has never run on this hub',
    ]);
    const unconfigured = await meshhub(['sync', 'status'], { env: env() });
    expect(unconfigured).toEqual({
      code: 1,
      out: 'sync: not configured (SYNC_UPSTREAM_URL is unset here); set SYNC_UPSTREAM_URL and SYNC_SITE_ID as the hub has them\n',
      err: '',
    });
  }, 120_000);
});
