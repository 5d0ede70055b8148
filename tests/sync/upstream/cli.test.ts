/**
 * `meshhub upstream migrate|site|user|subscription` through the command function the CLI calls
 * (runUpstreamCommand), on a real PostgreSQL: what each prints, its exit code, and what it
 * stored — sites with their keys (a site signing with its key is then accepted), revocation,
 * users with scrypt hashes, and subscriptions queued down to the sites that heard their nodes.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalIssuer, SIGNING_KEY_FILE } from '../../../src/auth/local-issuer.js';
import { verifyPassword } from '../../../src/auth/passwords.js';
import { batchSchema } from '../../../sync/protocol.js';
import { signSiteRequest, verifySiteRequest } from '../../../sync/signing.js';
import { BatchApplier } from '../../../sync/upstream/batch-apply.js';
import { runUpstreamCommand } from '../../../sync/upstream/commands.js';
import { openPool } from '../../../sync/upstream/db/pool.js';
import { SiteRegistry } from '../../../sync/upstream/sites.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';
import { nodeBody } from '../helpers/records.js';

const skip = await skipWithoutPostgres();
const PASSWORD = 'lantern-on-the-ridge';

describe.skipIf(skip)('meshhub upstream commands', () => {
  let schema: TestSchema;
  let dir: string;
  let pool: pg.Pool;
  let siteKey: LocalIssuer;
  let keyFile: string;

  /** Runs one command; `stdin` is what a pipe would give it. */
  async function run(
    args: string[],
    options: { env?: Record<string, string>; stdin?: string } = {},
  ): Promise<{ code: number; out: string; err: string }> {
    let out = '';
    let err = '';
    const code = await runUpstreamCommand(args, {
      env: { UPSTREAM_DATABASE_URL: schema.url, ...options.env },
      stdin: Readable.from(options.stdin === undefined ? [] : [Buffer.from(options.stdin)]),
      out: (t) => (out += t),
      err: (t) => (err += t),
    });
    return { code, out, err };
  }

  beforeAll(async () => {
    schema = await createTestSchema('cli');
    dir = mkdtempSync(join(tmpdir(), 'meshhub-upstream-cli-'));
    siteKey = await LocalIssuer.open(join(dir, 'site'));
    keyFile = join(dir, 'north.jwks.json');
    writeFileSync(keyFile, JSON.stringify(siteKey.jwks()));
    expect((await run(['migrate'])).code).toBe(0);
    pool = openPool(schema.url, { max: 2 });
  });

  afterAll(async () => {
    await pool?.end();
    await schema?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('migrate migrates, and again changes nothing', async () => {
    const res = await run(['migrate']);
    expect(res).toEqual({ code: 0, out: 'the upstream database is migrated\n', err: '' });
  });

  it('site add registers a site whose signed requests then verify', async () => {
    const res = await run(['site', 'add', 'north', '--public-key', keyFile, '--name', 'North ridge']);
    expect(res.err).toBe('');
    expect(res.code).toBe(0);
    expect(res.out).toBe(
      `registered site north (North ridge): requests signed with the public key(s) in ${keyFile} are accepted\n`,
    );
    const keys = await new SiteRegistry(pool).keysFor('north');
    const path = '/api/sync/v1/ping';
    const token = await signSiteRequest(siteKey, { siteId: 'north', method: 'GET', path, nowMs: Date.now() });
    await expect(verifySiteRequest(token, keys, { method: 'GET', path })).resolves.toMatchObject({
      siteId: 'north',
    });
  });

  it('site add refuses a registered site unless --replace, and bad input with clear errors', async () => {
    await run(['site', 'add', 'dup', '--public-key', keyFile]);
    const again = await run(['site', 'add', 'dup', '--public-key', keyFile]);
    expect(again.code).toBe(1);
    expect(again.err).toBe(
      'meshhub upstream site add: site dup is registered already; give --replace to replace its keys (this also lifts a revocation)\n',
    );
    const replaced = await run([
      'site',
      'add',
      'dup',
      '--jwks-url',
      'https://dup.example/.well-known/jwks.json',
      '--replace',
    ]);
    expect(replaced.code).toBe(0);
    expect(replaced.out).toContain('replaced the keys of site dup');

    const privateFile = join(dir, SIGNING_KEY_FILE);
    writeFileSync(
      privateFile,
      JSON.stringify({ privateJwk: { kty: 'OKP', crv: 'Ed25519', x: 'x', d: 'd' } }),
    );
    const cases: Array<[string[], number, string]> = [
      [
        ['site', 'add', 'x1'],
        2,
        'meshhub upstream site add: give either --public-key <jwks-file> or --jwks-url <url>\n',
      ],
      [
        ['site', 'add', 'x1', '--public-key', keyFile, '--jwks-url', 'https://x.example/jwks.json'],
        2,
        'meshhub upstream site add: give either --public-key <jwks-file> or --jwks-url <url>\n',
      ],
      [
        ['site', 'add', 'North', '--public-key', keyFile],
        2,
        'meshhub upstream site add: "North" is not a site id',
      ],
      [['site', 'add', 'x1', '--public-key', privateFile], 1, "is a site's private signing key"],
      [['site', 'add', 'x1', '--public-key', join(dir, 'missing.json')], 1, 'cannot read'],
      [['site', 'add', 'x1', '--jwks-url', 'http://keys.example/jwks.json'], 1, 'must be https'],
      [['site', 'add'], 2, 'meshhub upstream site add: expected one site id\n'],
      [
        ['site', 'add', 'x1', '--bogus'],
        2,
        'meshhub upstream site add: unknown option --bogus; valid options: --public-key, --jwks-url, --name, --replace, --help\n',
      ],
      [
        ['site', 'list', '--name', 'x'],
        2,
        'meshhub upstream site list: unknown option --name; it takes no options but --help\n',
      ],
      [
        ['site', 'rename', 'x1'],
        2,
        'meshhub upstream site: unknown subcommand "rename"; use one of: add, list, revoke (or --help)\n',
      ],
    ];
    for (const [args, code, message] of cases) {
      const res = await run(args);
      expect({ args, code: res.code }).toEqual({ args, code });
      expect(res.err).toContain(message);
    }
    expect(await new SiteRegistry(pool).get('x1')).toBeUndefined();
  });

  it('site list and site revoke', async () => {
    await run(['site', 'add', 'west', '--public-key', keyFile, '--name', 'West ridge']);
    await run(['site', 'add', 'east', '--public-key', keyFile]);
    const revoked = await run(['site', 'revoke', 'east']);
    expect(revoked).toMatchObject({ code: 0, err: '' });
    expect(revoked.out).toBe('revoked site east: its requests are refused from now on; its data stays\n');
    const twice = await run(['site', 'revoke', 'east']);
    expect(twice.code).toBe(0);
    expect(twice.out).toMatch(/^site east was revoked already \(\d{4}-\d\d-\d\dT/);
    const unknown = await run(['site', 'revoke', 'nowhere']);
    expect(unknown).toMatchObject({ code: 1, err: 'meshhub upstream site revoke: no site nowhere\n' });

    const list = await run(['site', 'list']);
    expect(list.code).toBe(0);
    const lines = list.out.trimEnd().split('\n');
    const east = lines.find((l) => l.startsWith('east '));
    const west = lines.find((l) => l.startsWith('west '));
    expect(east).toMatch(/^east\s+revoked\s+acked 0\s+nodes 0\s+last contact never$/);
    expect(west).toMatch(/^west\s+active\s+acked 0\s+nodes 0\s+last contact never {2}West ridge$/);
    expect((await new SiteRegistry(pool).keysFor('east'))?.revoked).toBe(true);
  });

  it('user add takes the password from MESHHUB_PASSWORD or stdin and stores a scrypt hash', async () => {
    const fromEnv = await run(['user', 'add', 'Alice', '--roles', 'subscriber,admin'], {
      env: { MESHHUB_PASSWORD: PASSWORD },
    });
    expect(fromEnv).toEqual({ code: 0, out: 'created user alice (subscriber, admin)\n', err: '' });
    const fromStdin = await run(['user', 'add', 'bob', '--password-stdin'], { stdin: `${PASSWORD}\n` });
    expect(fromStdin).toEqual({ code: 0, out: 'created user bob (subscriber)\n', err: '' });
    const { rows } = await pool.query(
      `SELECT username, password_hash, roles FROM users WHERE username IN ('alice', 'bob') ORDER BY username`,
    );
    expect(rows.map((r) => [r.username, r.roles])).toEqual([
      ['alice', ['subscriber', 'admin']],
      ['bob', ['subscriber']],
    ]);
    expect(await verifyPassword(PASSWORD, rows[1].password_hash)).toBe(true);
    expect(rows[1].password_hash).toMatch(/^scrypt\$/);

    const list = await run(['user', 'list']);
    expect(list.out).toMatch(/^alice\s+subscriber,admin\s+active\s+created /m);
  });

  it('user add refuses a taken name, a short password, a bad role and no password at all', async () => {
    expect((await run(['user', 'add', 'frank'], { env: { MESHHUB_PASSWORD: PASSWORD } })).code).toBe(0);
    const cases: Array<[string[], Record<string, string>, string | undefined, number, string]> = [
      [
        ['user', 'add', 'Frank'],
        { MESHHUB_PASSWORD: PASSWORD },
        undefined,
        1,
        'meshhub upstream: user "frank" already exists\n',
      ],
      [
        ['user', 'add', 'carol'],
        { MESHHUB_PASSWORD: 'short' },
        undefined,
        1,
        'password must be at least 8 characters',
      ],
      [
        ['user', 'add', 'carol', '--roles', 'Root!'],
        { MESHHUB_PASSWORD: PASSWORD },
        undefined,
        1,
        'roles "Root!" is not a valid role name',
      ],
      [
        ['user', 'add', 'carol', '--password-stdin'],
        {},
        '',
        2,
        'meshhub upstream user add: give the password on stdin with --password-stdin, or in MESHHUB_PASSWORD\n',
      ],
      [
        ['user', 'add'],
        { MESHHUB_PASSWORD: PASSWORD },
        undefined,
        2,
        'meshhub upstream user add: expected one user name',
      ],
      [
        ['user', 'list', '--roles', 'x'],
        {},
        undefined,
        2,
        'meshhub upstream user list: unknown option --roles; it takes no options but --help\n',
      ],
    ];
    for (const [args, env, stdin, code, message] of cases) {
      const res = await run(args, { env, ...(stdin === undefined ? {} : { stdin }) });
      expect({ args, code: res.code }).toEqual({ args, code });
      expect(res.err).toContain(message);
    }
    const { rows } = await pool.query(`SELECT 1 FROM users WHERE username = 'carol'`);
    expect(rows).toEqual([]);
  });

  it('user revoke bumps the token version (every older token dies); an unknown user is refused', async () => {
    expect((await run(['user', 'add', 'revokee'], { env: { MESHHUB_PASSWORD: PASSWORD } })).code).toBe(0);
    const version = async () =>
      (await pool.query('SELECT token_version FROM users WHERE username = $1', ['revokee'])).rows[0]
        ?.token_version as number;
    const before = await version();
    expect(await run(['user', 'revoke', 'Revokee'])).toEqual({
      code: 0,
      out: 'every token of revokee is revoked; they sign in again with their password\n',
      err: '',
    });
    expect(await version()).toBe(before + 1);
    const unknown = await run(['user', 'revoke', 'nobody-here']);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain('no user "nobody-here"');
  });

  it('subscription grant stores it and queues it for the sites that heard the nodes (every site for all)', async () => {
    await run(['site', 'add', 'south', '--public-key', keyFile]);
    await run(['user', 'add', 'dana'], { env: { MESHHUB_PASSWORD: PASSWORD } });
    await run(['site', 'add', 'hears-c', '--public-key', keyFile]);
    // south has heard !0000000a, hears-c only !0000000c (not in the grant).
    const heard = (siteId: string, nodeId: string) =>
      batchSchema.parse({
        protocol: 1,
        site_id: siteId,
        first_seq: 1,
        last_seq: 1,
        records: [
          {
            seq: 1,
            kind: 'node',
            at: Date.now(),
            body: nodeBody(nodeId, Date.now()),
          },
        ],
        dropped: [],
        sent_at: Date.now(),
      });
    const applier = new BatchApplier(pool);
    expect((await applier.apply('south', heard('south', '!0000000a'))).kind).toBe('applied');
    expect((await applier.apply('hears-c', heard('hears-c', '!0000000c'))).kind).toBe('applied');

    const some = await run([
      'subscription',
      'grant',
      'dana',
      '--nodes',
      '!0000000a,!0000000b',
      '--expires',
      '2099-12-31',
    ]);
    expect(some.err).toBe('');
    expect(some.code).toBe(0);
    expect(some.out).toMatch(
      /^granted #\d+ dana until 2100-01-01T00:00:00.000Z: !0000000a !0000000b; told 1 site\(s\) \(south\)\n$/,
    );
    const active = (
      await pool.query('SELECT site_id FROM sites WHERE revoked_at IS NULL ORDER BY site_id')
    ).rows.map((r) => r.site_id as string);
    expect(active).toContain('south');
    const all = await run(['subscription', 'grant', 'idp:abc-123', '--nodes', 'all']);
    expect(all.code).toBe(0);
    expect(all.out).toContain(`told ${active.length} site(s) (${active.join(', ')})`);

    const subs = await pool.query(
      'SELECT id, subscriber, all_nodes, node_ids, status, expires_at, source FROM subscriptions ORDER BY id',
    );
    expect(subs.rows.map(({ id: _id, ...r }) => r)).toEqual([
      {
        subscriber: 'dana',
        all_nodes: false,
        node_ids: ['!0000000a', '!0000000b'],
        status: 'active',
        expires_at: Date.UTC(2100, 0, 1),
        source: 'cli',
      },
      {
        subscriber: 'idp:abc-123',
        all_nodes: true,
        node_ids: [],
        status: 'active',
        expires_at: null,
        source: 'cli',
      },
    ]);
    const queued = await pool.query(
      `SELECT site_id, body FROM downlink WHERE kind = 'subscription' ORDER BY id`,
    );
    expect(queued.rows).toEqual([
      {
        site_id: 'south',
        body: {
          upstream_id: String(subs.rows[0].id),
          subscriber: 'dana',
          all_nodes: false,
          node_ids: ['!0000000a', '!0000000b'],
          status: 'active',
          expires_at: Date.UTC(2100, 0, 1),
        },
      },
      ...active.map((site_id) => ({
        site_id,
        body: {
          upstream_id: String(subs.rows[1].id),
          subscriber: 'idp:abc-123',
          all_nodes: true,
          node_ids: [],
          status: 'active',
          expires_at: null,
        },
      })),
    ]);
  });

  it('subscription grant refuses unknown users, bad node ids and past expiries', async () => {
    await run(['user', 'add', 'erin'], { env: { MESHHUB_PASSWORD: PASSWORD } });
    const cases: Array<[string[], number, string]> = [
      [
        ['subscription', 'grant', 'nobody', '--nodes', 'all'],
        1,
        'no user "nobody" (add it with meshhub upstream user add)',
      ],
      [
        ['subscription', 'grant', 'erin', '--nodes', '!xyz'],
        2,
        '--nodes: "!xyz" is not a node id like !a1b2c3d4',
      ],
      [['subscription', 'grant', 'erin'], 2, 'give --nodes all or --nodes'],
      [['subscription', 'grant', 'erin', '--nodes', 'all', '!0000000a'], 2, 'give --nodes all or --nodes'],
      [
        ['subscription', 'grant', 'erin', '--nodes', 'all', '--expires', '2001-01-01'],
        2,
        '--expires is in the past',
      ],
      [
        ['subscription', 'grant', 'erin', '--nodes', 'all', '--expires', 'soon'],
        2,
        '--expires expects a date',
      ],
      [
        ['subscription', 'revoke', 'erin'],
        2,
        'meshhub upstream subscription: unknown subcommand "revoke"; use one of: grant (or --help)\n',
      ],
    ];
    const before = await pool.query('SELECT count(*) AS n FROM subscriptions');
    for (const [args, code, message] of cases) {
      const res = await run(args);
      expect({ args, code: res.code }).toEqual({ args, code });
      expect(res.err).toContain(message);
    }
    const after = await pool.query('SELECT count(*) AS n FROM subscriptions');
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });

  it("takes the hub's words too; the old spellings still work with one deprecation line each", async () => {
    // The hub's old spellings: --role/--admin, --all, --until, node ids as arguments.
    const old = await run(['user', 'add', 'gina', '--role', 'subscriber', '--admin', '--password-stdin'], {
      stdin: PASSWORD,
    });
    expect(old).toEqual({
      code: 0,
      out: 'created user gina (subscriber, admin)\n',
      err:
        'meshhub upstream user add: --admin is deprecated, use --roles admin\n' +
        'meshhub upstream user add: --role is deprecated, use --roles ROLE,ROLE\n',
    });
    // The upstream's own old way: the password on stdin without --password-stdin.
    const implied = await run(['user', 'add', 'hank'], { stdin: PASSWORD });
    expect(implied).toEqual({
      code: 0,
      out: 'created user hank (subscriber)\n',
      err: 'meshhub upstream user add: a password on stdin without --password-stdin is deprecated, use --password-stdin\n',
    });
    const granted = await run(['subscription', 'grant', 'gina', '!0000000a', '--until', '2099-12-31']);
    expect(granted.code).toBe(0);
    expect(granted.out).toMatch(/^granted #\d+ gina until 2100-01-01T00:00:00.000Z: !0000000a; /);
    expect(granted.err).toBe(
      'meshhub upstream subscription grant: --until is deprecated, use --expires\n' +
        'meshhub upstream subscription grant: node ids as arguments are deprecated, use --nodes !0000000a\n',
    );
    const all = await run(['subscription', 'grant', 'hank', '--all']);
    expect(all.code).toBe(0);
    expect(all.out).toMatch(/^granted #\d+ hank no expiry: all nodes; /);
    expect(all.err).toBe('meshhub upstream subscription grant: --all is deprecated, use --nodes all\n');
    const { rows } = await pool.query(
      `SELECT username, roles FROM users WHERE username IN ('gina', 'hank') ORDER BY username`,
    );
    expect(rows).toEqual([
      { username: 'gina', roles: ['subscriber', 'admin'] },
      { username: 'hank', roles: ['subscriber'] },
    ]);
  });

  it('reports settings and unknown commands clearly', async () => {
    const noUrl = await runUpstreamCommand(['site', 'list'], {
      env: {},
      stdin: Readable.from([]),
      out: () => {},
      err: (t) => expect(t).toBe('meshhub upstream: UPSTREAM_DATABASE_URL: is required\n'),
    });
    expect(noUrl).toBe(1);
    let err = '';
    const badUrl = await runUpstreamCommand(['site', 'list'], {
      env: { UPSTREAM_DATABASE_URL: 'mysql://root:hunter2@db/x' },
      stdin: Readable.from([]),
      out: () => {},
      err: (t) => (err += t),
    });
    expect(badUrl).toBe(1);
    expect(err).toContain('UPSTREAM_DATABASE_URL: expected a PostgreSQL URL');
    expect(err).not.toContain('hunter2');
    const unknown = await run(['frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toBe(
      'meshhub upstream: unknown subcommand "frobnicate"; use one of: serve, migrate, site, user, subscription, plan (or --help)\n',
    );
    const down = await runUpstreamCommand(['site', 'list'], {
      env: { UPSTREAM_DATABASE_URL: 'postgres://meshhub:meshhub@127.0.0.1:1/nothing' },
      stdin: Readable.from([]),
      out: () => {},
      err: (t) => (err = t),
    });
    expect(down).toBe(1);
    expect(err).toMatch(/^meshhub upstream: PostgreSQL \(UPSTREAM_DATABASE_URL\) does not answer: /);
  });
});
