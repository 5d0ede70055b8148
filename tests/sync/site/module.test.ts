/**
 * The sync module as the hub builds it (sync/site/module.ts): its settings and their errors,
 * reported with the others; no upstream → no outbox triggers and no actor; an upstream that
 * does not answer is normal for a site (the hub's health stays ok, the error is in the detail);
 * `meshhub sync status` and `meshhub sync key`.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { standaloneModuleHost } from '../../../hub/module-host.js';
import { loadConfig } from '../../../hub/settings.js';
import { LocalIssuer } from '../../../src/auth/local-issuer.js';
import { ConfigError, loadSlices } from '../../../src/config/load.js';
import { buildHealthReport } from '../../../src/http/health.js';
import { Supervisor } from '../../../src/kernel/supervisor.js';
import { SubscriptionRepository } from '../../../src/messaging/subscription-repository.js';
import { StoreActor } from '../../../src/store/store-actor.js';
import { syncCommand } from '../../../sync/site/commands.js';
import { syncModule } from '../../../sync/site/module.js';
import { enableOutbox, outboxTriggerNames } from '../../../sync/site/outbox-schema.js';
import { SYNC_STATE } from '../../../sync/site/push-actor.js';
import { freePort, waitFor } from '../../helpers/hub.js';

const log = pino({ level: 'silent' });
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-sync-module-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadSlices(env, [syncModule]);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

function settingsOf(env: Record<string, string>): unknown {
  return loadSlices(env, [syncModule]).get('sync');
}

describe('sync settings', () => {
  it('are optional: without an upstream URL nothing is required', () => {
    expect(problemsOf({})).toEqual([]);
    expect(settingsOf({})).toEqual({
      SYNC_OUTBOX_MAX_MB: 256,
      SYNC_BATCH_MAX_RECORDS: 5000,
      SYNC_BATCH_MAX_BYTES: 1_048_576,
      SYNC_READINGS_DEBOUNCE: 2_000,
      SYNC_RETRY_MAX: 300_000,
      SYNC_ALLOW_PRIVATE_NETWORK: false,
    });
  });

  it('take the readings debounce as a duration, at most 10 minutes', () => {
    expect(settingsOf({ SYNC_READINGS_DEBOUNCE: '5s' })).toMatchObject({ SYNC_READINGS_DEBOUNCE: 5_000 });
    expect(problemsOf({ SYNC_READINGS_DEBOUNCE: '11m' })).toEqual([
      'SYNC_READINGS_DEBOUNCE: must be at most 10m (got "11m")',
    ]);
    expect(problemsOf({ SYNC_READINGS_DEBOUNCE: 'later' })).toEqual([
      'SYNC_READINGS_DEBOUNCE: must be a duration like 90s, 15m, 24h or 30d (got "later")',
    ]);
  });

  it('report every bad setting at once, by name', () => {
    expect(
      problemsOf({
        SYNC_UPSTREAM_URL: 'upstream.example.org',
        SYNC_BATCH_MAX_RECORDS: '6000',
        SYNC_RETRY_MAX: 'soon',
      }),
    ).toEqual([
      'SYNC_BATCH_MAX_RECORDS: must be a whole number from 1 to 5000 (got "6000")',
      'SYNC_RETRY_MAX: must be a duration like 90s, 15m, 24h or 30d (got "soon")',
      'SYNC_UPSTREAM_URL: is not an absolute URL (got "upstream.example.org")',
      'SYNC_SITE_ID: required when SYNC_UPSTREAM_URL is set: the id this site is registered under upstream (meshhub upstream site add <site_id>)',
    ]);
  });

  it('refuse plain http to a host that is not loopback', () => {
    expect(problemsOf({ SYNC_UPSTREAM_URL: 'http://upstream.example.org', SYNC_SITE_ID: 'north' })).toEqual([
      'SYNC_UPSTREAM_URL: must use https (plain http only to a loopback host) (got "http://upstream.example.org")',
    ]);
    expect(problemsOf({ SYNC_UPSTREAM_URL: 'http://127.0.0.1:9000', SYNC_SITE_ID: 'north' })).toEqual([]);
    expect(problemsOf({ SYNC_UPSTREAM_URL: 'http://localhost:9000/', SYNC_SITE_ID: 'north' })).toEqual([]);
  });

  it('refuse a private address unless SYNC_ALLOW_PRIVATE_NETWORK, and credentials always', () => {
    const lan = { SYNC_UPSTREAM_URL: 'https://192.168.1.20', SYNC_SITE_ID: 'north' };
    expect(problemsOf(lan)).toEqual([
      'SYNC_UPSTREAM_URL: points at a private address (set SYNC_ALLOW_PRIVATE_NETWORK=true for an upstream on the LAN) (got "https://192.168.1.20")',
    ]);
    expect(problemsOf({ ...lan, SYNC_ALLOW_PRIVATE_NETWORK: 'true' })).toEqual([]);
    expect(
      problemsOf({ SYNC_UPSTREAM_URL: 'https://site:secret@upstream.example.org', SYNC_SITE_ID: 'north' }),
    ).toEqual([
      'SYNC_UPSTREAM_URL: must not carry a user name or password (got "https://site:secret@upstream.example.org")',
    ]);
  });

  it('refuse a site id that is not lower-case letters, digits and "-"', () => {
    expect(
      problemsOf({ SYNC_UPSTREAM_URL: 'https://upstream.example.org', SYNC_SITE_ID: 'North_Site' }),
    ).toEqual([
      'SYNC_SITE_ID: lower-case letters, digits and "-", at most 63, starting with a letter or digit (got "North_Site")',
    ]);
  });
});

async function moduleHost() {
  const dir = tempDir();
  const store = StoreActor.open(join(dir, 'meshhub.sqlite'), log);
  cleanups.push(() => store.stop());
  const parts = await standaloneModuleHost({ db: store.db, dataDir: dir, log });
  return { ...parts, dir, store };
}

describe('the sync module', () => {
  it('without an upstream runs no actor and drops the outbox triggers', async () => {
    const h = await moduleHost();
    enableOutbox(h.store.db);
    expect(outboxTriggerNames(h.store.db).length).toBeGreaterThan(0);
    const actors = await h.host.create(syncModule, settingsOf({}));
    expect(actors).toEqual([]);
    expect(outboxTriggerNames(h.store.db)).toEqual([]);
    // A record written now leaves no outbox entry.
    new SubscriptionRepository(h.store.db).create({ subscriber: 'alice', nodes: 'all', source: 'cli' });
    expect(h.store.db.prepare('SELECT count(*) AS n FROM sync_outbox').get()).toEqual({ n: 0 });
  });

  it('with an upstream creates the triggers before any actor starts', async () => {
    const h = await moduleHost();
    const actors = await h.host.create(
      syncModule,
      settingsOf({ SYNC_UPSTREAM_URL: 'https://upstream.example.org', SYNC_SITE_ID: 'north' }),
    );
    expect(actors.map((a) => [a.name, a.required])).toEqual([['sync', false]]);
    new SubscriptionRepository(h.store.db).create({ subscriber: 'alice', nodes: 'all', source: 'cli' });
    expect(h.store.db.prepare('SELECT kind FROM sync_outbox').all()).toEqual([{ kind: 'subscription' }]);
  });

  it('offline is normal: the hub stays ok, the sync detail and `sync status` say what failed', async () => {
    const h = await moduleHost();
    const port = await freePort(); // nothing listens there
    const actors = await h.host.create(
      syncModule,
      settingsOf({
        SYNC_UPSTREAM_URL: `http://127.0.0.1:${port}`,
        SYNC_SITE_ID: 'north',
        SYNC_RETRY_MAX: '1s',
      }),
    );
    const supervisor = new Supervisor({ log });
    supervisor.add(h.store);
    for (const actor of actors) supervisor.add(actor);
    await supervisor.startAll();
    cleanups.push(() => supervisor.stopAll());
    new SubscriptionRepository(h.store.db).create({ subscriber: 'alice', nodes: 'all', source: 'cli' });

    const detail = await waitFor(() => {
      const sync = supervisor.status().find((a) => a.name === 'sync')?.detail.sync as
        | Record<string, unknown>
        | undefined;
      return sync?.last_error ? sync : undefined;
    });
    expect(detail).toMatchObject({
      upstream: `http://127.0.0.1:${port}`,
      site_id: 'north',
      acked_seq: 0,
      outbox_depth: 1,
      last_success: null,
      last_error: 'GET /api/sync/v1/ping: ECONNREFUSED',
    });
    const health = buildHealthReport({
      version: 'test',
      startedAt: Date.now(),
      radio: { state: 'disconnected', transport: 'none', simulated: false },
      actors: supervisor.status(),
    });
    expect(health.status).toBe('ok');

    const metrics = (await h.metrics.render()).body;
    expect(metrics).toContain('meshhub_sync_outbox_depth 1');
    expect(metrics).toContain('meshhub_sync_downlink_connected 0');

    const env = { DATA_DIR: h.dir, SYNC_UPSTREAM_URL: `http://127.0.0.1:${port}`, SYNC_SITE_ID: 'north' };
    const status = await runSync(['status'], env, () => loadConfig(env).DATA_DIR);
    expect(status.code).toBe(0);
    expect(status.err).toBe(`meshhub: using database ${join(h.dir, 'meshhub.sqlite')} (DATA_DIR)\n`);
    // One field a line, the values aligned.
    expect(status.out.split('\n').slice(0, -1)).toEqual([
      `upstream:       http://127.0.0.1:${port}`,
      'site:           north',
      'acked seq:      0',
      'last seq:       1',
      expect.stringMatching(/^outbox depth: {3}1 entries, about 1 KiB$/),
      expect.stringMatching(/^oldest entry: {3}\d+s old$/),
      'last success:   never',
      expect.stringMatching(/^last error: {5}\S+Z \(\d+s ago\): GET \/api\/sync\/v1\/ping: ECONNREFUSED$/),
      'dropped total:  0',
      expect.stringMatching(
        /^downlink: {7}(connecting|disconnected) since \S+Z \(\d+s ago\) \(as the hub last recorded it\)$/,
      ),
    ]);
  });
});

/** `meshhub sync …` through the command function the CLI calls: exit code, stdout, stderr. */
async function runSync(
  args: string[],
  env: Record<string, string>,
  dataDir: () => string,
): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await syncCommand(args, {
    env,
    dataDir,
    dataDirFrom: 'DATA_DIR',
    out: (t) => (out += t),
    err: (t) => (err += t),
  });
  return { code, out, err };
}

describe('meshhub sync', () => {
  it('key prints the hub public key set (only that on stdout), the same the hub signs with', async () => {
    const dir = tempDir();
    const res = await runSync(['key'], {}, () => dir);
    expect(res.code).toBe(0);
    const printed = JSON.parse(res.out);
    expect(printed).toEqual((await LocalIssuer.open(dir)).jwks());
    expect(printed.keys[0]).not.toHaveProperty('d');
    expect(res.err).toMatch(/^meshhub: created a new signing key \S+jwt-signing-key.json \(DATA_DIR\)/);
    expect((await runSync(['key'], {}, () => dir)).err).toMatch(/^meshhub: using signing key /);
  });

  it('status on a hub that never synced says so; an unknown subcommand names the valid ones', async () => {
    const dir = tempDir();
    const h = await moduleHost();
    const env = { SYNC_UPSTREAM_URL: 'https://upstream.example', SYNC_SITE_ID: 'north' };
    expect(await runSync(['status'], env, () => h.dir)).toMatchObject({
      code: 0,
      out:
        'upstream:       https://upstream.example\n' +
        'site:           north\n' +
        'outbox:         none yet: sync has never run on this hub\n',
    });
    expect(await runSync(['push'], {}, () => dir)).toEqual({
      code: 2,
      out: '',
      err: 'meshhub sync: unknown subcommand "push"; use one of: status, key (or --help)\n',
    });
  });

  it('status without SYNC_UPSTREAM_URL says only that sync is not configured, and which setting to set', async () => {
    const h = await moduleHost();
    // An earlier run with sync left a downlink state: not shown when sync is not configured now.
    enableOutbox(h.store.db);
    h.store.db
      .prepare('INSERT INTO sync_state (key, value) VALUES (?, ?)')
      .run(SYNC_STATE.downlinkState, 'connected');
    const res = await runSync(['status'], {}, () => h.dir);
    expect(res).toEqual({
      code: 1,
      out: 'sync: not configured (SYNC_UPSTREAM_URL is unset here); set SYNC_UPSTREAM_URL and SYNC_SITE_ID as the hub has them\n',
      err: '',
    });
  });

  it('status refuses a data directory without a hub database, and creates none', async () => {
    const dir = join(tempDir(), 'not-the-hub');
    const res = await runSync(['status'], { SYNC_UPSTREAM_URL: 'https://upstream.example' }, () => dir);
    expect(res.code).toBe(1);
    expect(res.err).toBe(
      `meshhub: no hub database at ${join(dir, 'meshhub.sqlite')} (DATA_DIR); set DATA_DIR to the running hub's data directory\n`,
    );
    expect(existsSync(dir)).toBe(false);
  });
});
