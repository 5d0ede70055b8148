/**
 * `meshhub user|token|subscription` as real processes (the built CLI) against the data
 * directory of a hub that is running at the same time: what they write, the running hub sees,
 * revocations included (issue 23, finding 14: a token issued before `user remove`, `user roles`,
 * `user passwd` or `token revoke` is refused over HTTP and MQTT right after).
 */
import { randomUUID } from 'node:crypto';
import { decodeJwt } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HubUserService } from '../../src/auth/user-service.js';
import { buildCli, type CliResult, meshhubCli } from '../helpers/cli.js';
import { mqttOf, startTestHub, type TestHub } from '../helpers/hub.js';
import { call, FAST_MESSAGING, knownNodes, PASSWORD, send, tokenFor } from '../messaging/helpers.js';
import { connect, endClients, refusedCode } from '../mqtt/helpers.js';

let t: TestHub;
let nodes: string[];

beforeAll(async () => {
  buildCli();
  t = await startTestHub(FAST_MESSAGING);
  nodes = await knownNodes(t, 6);
}, 180_000);
afterAll(() => t?.stop());

/** A name no other test uses, so each test starts from users of its own. */
const uniqueName = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

/** A user made directly in the database, for tests about the other commands. */
async function existingUser(prefix: string): Promise<string> {
  const username = uniqueName(prefix);
  await new HubUserService(t.hub.store.db).add({ username, password: PASSWORD, roles: ['subscriber'] });
  return username;
}

async function meshhub(args: string[], stdin = ''): Promise<CliResult> {
  const res = await meshhubCli(args, {
    env: { ...process.env, DATA_DIR: t.dataDir, LOG_LEVEL: 'silent' },
    stdin,
  });
  // The line naming the database opened is checked in tests/hub/cli-data-dir.test.ts.
  return { ...res, err: res.err.replace(/^meshhub: using database .*\n/m, '') };
}

describe('meshhub user', () => {
  it('adds a user from a password on stdin; the running hub logs them in', async () => {
    const alice = uniqueName('alice');
    const added = await meshhub(
      ['user', 'add', `A${alice.slice(1)}`, '--password-stdin'],
      'moss-on-the-north-side\n',
    );
    expect(added).toMatchObject({ code: 0, out: `created user ${alice} (subscriber)\n` });
    expect(await tokenFor(t.baseUrl, alice, 'moss-on-the-north-side')).toMatch(/^ey/);
    const ops = uniqueName('ops');
    const admin = await meshhub(
      ['user', 'add', ops, '--roles', 'integration,admin', '--password-stdin'],
      'ops-password-1',
    );
    expect(admin.out).toBe(`created user ${ops} (integration, admin)\n`);
    const list = await meshhub(['user', 'list']);
    expect(list.code).toBe(0);
    expect(list.out).toMatch(new RegExp(`^${alice}\\s+subscriber\\s+created \\d{4}-`, 'm'));
    expect(list.out).toMatch(new RegExp(`^${ops}\\s+integration,admin\\s+`, 'm'));
  });

  it('refuses a duplicate, a password argument and a short password, with exit codes', async () => {
    const alice = await existingUser('alice');
    expect(await meshhub(['user', 'add', alice, '--password-stdin'], 'another-password')).toMatchObject({
      code: 1,
      err: `meshhub: user "${alice}" already exists\n`,
    });
    const bob = uniqueName('bob');
    const noStdin = await meshhub(['user', 'add', bob]);
    expect(noStdin.code).toBe(2);
    expect(noStdin.err).toMatch(/--password-stdin/);
    const short = await meshhub(['user', 'add', bob, '--password-stdin'], 'short\n');
    expect(short).toMatchObject({ code: 1, err: 'meshhub: password must be at least 8 characters\n' });
    expect((await meshhub(['user', 'frobnicate'])).code).toBe(2);
  });
});

describe('revoking tokens from the CLI while the hub runs', () => {
  afterEach(endClients);

  /** A user with an MQTT role too, and a token of theirs that works on HTTP and MQTT. */
  async function signedIn(prefix: string) {
    const username = uniqueName(prefix);
    await new HubUserService(t.hub.store.db).add({
      username,
      password: PASSWORD,
      roles: ['subscriber', 'device'],
    });
    const token = await tokenFor(t.baseUrl, username);
    const mqttUrl = `mqtt://127.0.0.1:${mqttOf(t.hub).port}`;
    const http = async (bearer = token) =>
      (await call(t.baseUrl, 'GET', '/api/v1/messages/conversations', { token: bearer })).status;
    expect(await http()).toBe(200);
    expect((await connect(mqttUrl, { username, password: token })).connected).toBe(true);
    await endClients();
    return {
      username,
      token,
      http,
      mqtt: (bearer = token) => refusedCode(mqttUrl, { username, password: bearer }),
    };
  }

  it('meshhub token revoke <user>: the old token gets 401 and CONNACK 4; a new sign-in works', async () => {
    const u = await signedIn('rev');
    const res = await meshhub(['token', 'revoke', u.username]);
    expect(res).toMatchObject({ code: 0, out: `revoked every token and sign-in of ${u.username}\n` });
    expect(await u.http()).toBe(401);
    expect(await u.mqtt()).toBe(4);
    expect(await u.http(await tokenFor(t.baseUrl, u.username))).toBe(200);
    expect(await meshhub(['token', 'revoke', 'nobody'])).toMatchObject({
      code: 1,
      err: 'meshhub token revoke: no user "nobody"\n',
    });
    expect((await meshhub(['token', 'revoke'])).code).toBe(2);
  });

  it("meshhub user remove: the removed user's token gets 401 and CONNACK 4", async () => {
    const u = await signedIn('gone');
    expect((await meshhub(['user', 'remove', u.username])).code).toBe(0);
    expect(await u.http()).toBe(401);
    expect(await u.mqtt()).toBe(4);
  });

  it('meshhub user passwd: tokens from before the change get 401 and CONNACK 4', async () => {
    const u = await signedIn('pw');
    const res = await meshhub(['user', 'passwd', u.username, '--password-stdin'], 'a-brand-new-password\n');
    expect(res.code).toBe(0);
    expect(await u.http()).toBe(401);
    expect(await u.mqtt()).toBe(4);
    expect(await u.http(await tokenFor(t.baseUrl, u.username, 'a-brand-new-password'))).toBe(200);
  });

  it("meshhub user roles: a demoted user's old token gets 401 and CONNACK 4; the new one has the new roles", async () => {
    const u = await signedIn('demote');
    const res = await meshhub(['user', 'roles', u.username, '--roles', 'subscriber']);
    expect(res).toMatchObject({
      code: 0,
      out: `roles of ${u.username} are now subscriber (their tokens were revoked)\n`,
    });
    expect(await u.http()).toBe(401);
    expect(await u.mqtt()).toBe(4);
    const fresh = await tokenFor(t.baseUrl, u.username);
    expect(decodeJwt(fresh).roles).toEqual(['subscriber']);
    expect(await u.http(fresh)).toBe(200);
    expect(await meshhub(['user', 'roles', 'nobody'])).toMatchObject({ code: 1 });
  });

  it('a machine token from meshhub token keeps its lifetime and is revoked the same way', async () => {
    const u = await signedIn('machine');
    const machine = (await meshhub(['token', u.username, '--ttl', '30d'])).out.trim();
    const claims = decodeJwt(machine);
    expect(claims.exp! - claims.iat!).toBe(30 * 86_400);
    expect(await u.http(machine)).toBe(200);
    expect((await meshhub(['token', 'revoke', u.username])).code).toBe(0);
    expect(await u.http(machine)).toBe(401);
    expect(await u.mqtt(machine)).toBe(4);
  });
});

describe('meshhub token', () => {
  it('prints a token the running hub accepts, with the asked lifetime', async () => {
    const alice = await existingUser('alice');
    const res = await meshhub(['token', alice, '--ttl', '2h']);
    expect(res.code).toBe(0);
    const token = res.out.trim();
    const claims = decodeJwt(token);
    expect(claims.exp! - claims.iat!).toBe(7200);
    expect(claims).toMatchObject({ sub: alice, roles: ['subscriber'] });
    expect((await call(t.baseUrl, 'GET', '/api/v1/messages/conversations', { token })).status).toBe(200);
    expect(await meshhub(['token', 'nobody'])).toMatchObject({
      code: 1,
      err: 'meshhub token: no user "nobody"\n',
    });
    expect((await meshhub(['token', alice, '--ttl', 'forever'])).code).toBe(2);
  });
});

describe('meshhub subscription', () => {
  it('grants nodes until a date and revokes them, seen by the running hub at once', async () => {
    const alice = await existingUser('alice');
    const token = (await meshhub(['token', alice])).out.trim();
    const [a, b] = nodes;
    expect((await send(t, token, a!, 'before')).status).toBe(403);
    const granted = await meshhub(['subscription', 'grant', alice, '--nodes', a!, '--expires', '2099-12-31']);
    expect(granted.code).toBe(0);
    expect(granted.out).toMatch(
      new RegExp(`^granted #\\d+ ${alice} active until 2100-01-01T00:00:00.000Z \\(cli\\): ${a}\\n$`),
    );
    expect((await send(t, token, a!, 'granted')).status).toBe(202);
    expect((await send(t, token, b!, 'not granted')).status).toBe(403);

    expect((await meshhub(['subscription', 'grant', alice, '--nodes', 'all'])).code).toBe(0);
    expect((await send(t, token, b!, 'all nodes')).status).toBe(202);
    const list = await meshhub(['subscription', 'list', alice]);
    expect(list.out.trim().split('\n')).toHaveLength(2);

    const revoked = await meshhub(['subscription', 'revoke', alice, '--nodes', 'all']);
    expect(revoked).toMatchObject({ code: 0, out: `revoked 2 subscription(s) of ${alice}\n` });
    expect((await send(t, token, a!, 'after')).status).toBe(403);
  });

  it('refuses unknown users, mixed scopes, bad node ids and past dates', async () => {
    const alice = await existingUser('alice');
    const all = ['--nodes', 'all'];
    expect((await meshhub(['subscription', 'grant', alice, ...all])).code).toBe(0);
    expect((await meshhub(['subscription', 'grant', uniqueName('nobody'), ...all])).code).toBe(1);
    expect((await meshhub(['subscription', 'grant', alice, ...all, nodes[0]!])).code).toBe(2);
    expect((await meshhub(['subscription', 'grant', alice, '--nodes', 'a1b2c3d4'])).code).toBe(2);
    expect((await meshhub(['subscription', 'grant', alice])).code).toBe(2);
    expect((await meshhub(['subscription', 'grant', alice, ...all, '--expires', '2001-01-01'])).code).toBe(2);
    expect((await meshhub(['subscription', 'grant', alice, ...all, '--expires', 'tomorrow'])).code).toBe(2);
    // Only the one valid grant is there.
    expect((await meshhub(['subscription', 'list', alice])).out.trim().split('\n')).toHaveLength(1);
  });
});

describe('the old spellings (before the hub and the upstream took the same words)', () => {
  it('still work, each with one "deprecated, use X" line on stderr', async () => {
    const carol = uniqueName('carol');
    const added = await meshhub(
      ['user', 'add', carol, '--admin', '--role', 'integration', '--password-stdin'],
      'ops-password-1',
    );
    expect(added).toMatchObject({ code: 0, out: `created user ${carol} (integration, admin)\n` });
    expect(added.err).toBe(
      'meshhub user add: --admin is deprecated, use --roles admin\n' +
        'meshhub user add: --role is deprecated, use --roles ROLE,ROLE\n',
    );
    const [a, b] = nodes;
    const granted = await meshhub(['subscription', 'grant', carol, a!, b!, '--until', '2099-12-31']);
    expect(granted.code).toBe(0);
    expect(granted.out).toMatch(new RegExp(`until 2100-01-01T00:00:00.000Z \\(cli\\): ${a} ${b}\\n$`));
    expect(granted.err).toBe(
      'meshhub subscription grant: --until is deprecated, use --expires\n' +
        `meshhub subscription grant: node ids as arguments are deprecated, use --nodes ${a},${b}\n`,
    );
    const revoked = await meshhub(['subscription', 'revoke', carol, '--all']);
    expect(revoked).toMatchObject({
      code: 0,
      out: `revoked 1 subscription(s) of ${carol}\n`,
      err: 'meshhub subscription revoke: --all is deprecated, use --nodes all\n',
    });
  });
});
