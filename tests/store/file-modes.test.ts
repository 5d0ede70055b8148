/**
 * DATA_DIR is private however the hub is started (README "Files on disk"): the built hub started
 * from a shell whose umask is 022 makes DATA_DIR 0700 and the database, its -wal/-shm and the
 * signing key 0600; a DATA_DIR left 0755 with 0644 files (an older hub, a restored backup) is
 * tightened at the next start, sub-folders too; a CLI command run under umask 022 on a fresh
 * DATA_DIR makes it private too; the upstream's DATA_DIR (its signing key) likewise; a file the
 * hub cannot tighten stops the start with one line naming it.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createUpstream } from '../../sync/upstream/main.js';
import { loadUpstreamSettings } from '../../sync/upstream/settings.js';
import { buildCli, CLI, outputOf } from '../helpers/cli.js';
import { freePort, getJson, waitFor } from '../helpers/hub.js';
import { noteSkip } from '../helpers/skips.js';

const dirs: string[] = [];
const children: ChildProcess[] = [];

beforeAll(buildCli, 120_000);

afterEach(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  children.length = 0;
  dirs.length = 0;
});

/** The files a hub keeps in DATA_DIR, each 0600. */
const HUB_FILES_PRIVATE = {
  // The running hub's hold on DATA_DIR (src/store/data-dir-lock.ts).
  'hub.lock': '600',
  'hub.pid': '600',
  'jwt-signing-key.json': '600',
  'meshhub.sqlite': '600',
  'meshhub.sqlite-wal': '600',
  'meshhub.sqlite-shm': '600',
  // The Web Push key pair of notifications (src/notifications).
  'vapid-keys.json': '600',
};

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

/** Every file and folder under `dir` (relative path → octal mode). */
function modes(dir: string, prefix = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    out[`${prefix}${entry.name}`] = mode(path);
    if (entry.isDirectory()) Object.assign(out, modes(path, `${prefix}${entry.name}/`));
  }
  return out;
}

function tempDir(): string {
  const parent = mkdtempSync(join(tmpdir(), 'meshhub-modes-'));
  dirs.push(parent);
  return parent;
}

/** The built hub, as `npm start` runs it, from a shell with `umask 022`. */
async function startHub(dataDir: string): Promise<{ child: ChildProcess; stop(): Promise<void> }> {
  const port = await freePort();
  const child = spawn('/bin/sh', ['-c', `umask 022; exec "${process.execPath}" "${CLI}" start`], {
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(port),
      RADIO: 'none',
      MQTT_PORT: '0',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const output = outputOf(child);
  await waitFor(
    async () => (await getJson(`http://127.0.0.1:${port}/health`).catch(() => undefined))?.status,
    30_000,
    () => `the hub to answer /health; it said:\n${output()}`,
  );
  return {
    child,
    stop: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

describe('files in DATA_DIR', () => {
  it('are private after a start from a shell with umask 022: DATA_DIR 0700, every file 0600', async () => {
    const dataDir = join(tempDir(), 'data');
    const hub = await startHub(dataDir);
    try {
      expect(mode(dataDir)).toBe('700');
      expect(modes(dataDir)).toEqual(HUB_FILES_PRIVATE);
    } finally {
      await hub.stop();
    }
  });

  it('tightens a DATA_DIR left 0755 with 0644 files (and sub-folders) at the next start', async () => {
    const dataDir = join(tempDir(), 'data');
    await (await startHub(dataDir)).stop();
    // As an older hub or a restored backup leaves it: SQLite's side files, a copy, a folder.
    writeFileSync(join(dataDir, 'meshhub.sqlite-wal'), '');
    writeFileSync(join(dataDir, 'meshhub.sqlite-shm'), '');
    mkdirSync(join(dataDir, 'backups'));
    writeFileSync(join(dataDir, 'backups', 'meshhub-2026-11-01.sqlite'), 'old');
    for (const [path, loose] of Object.entries(modes(dataDir)))
      chmodSync(join(dataDir, path), loose === '700' || path === 'backups' ? 0o755 : 0o644);
    chmodSync(dataDir, 0o755);
    expect(mode(join(dataDir, 'meshhub.sqlite'))).toBe('644');

    const hub = await startHub(dataDir);
    try {
      expect(mode(dataDir)).toBe('700');
      expect(modes(dataDir)).toEqual({
        ...HUB_FILES_PRIVATE,
        backups: '700',
        'backups/meshhub-2026-11-01.sqlite': '600',
      });
    } finally {
      await hub.stop();
    }
  });

  it('stay private when a CLI command under umask 022 makes DATA_DIR and the database', () => {
    const dataDir = join(tempDir(), 'data');
    const run = spawnSync(
      '/bin/sh',
      ['-c', `umask 022; exec "${process.execPath}" "${CLI}" user add alice --password-stdin`],
      { env: { ...process.env, DATA_DIR: dataDir }, input: 'correct horse battery\n', encoding: 'utf8' },
    );
    expect(run.status, run.stderr).toBe(0);
    expect(mode(dataDir)).toBe('700');
    expect(Object.values(modes(dataDir)).every((m) => m === '600')).toBe(true);
    expect(modes(dataDir)).toHaveProperty('meshhub.sqlite', '600');
  });

  it('makes the upstream’s DATA_DIR private too, before its signing key is made', async () => {
    const parent = tempDir();
    const fresh = join(parent, 'fresh');
    const loose = join(parent, 'loose');
    mkdirSync(loose, { mode: 0o755 });
    chmodSync(loose, 0o755);
    writeFileSync(join(loose, 'notes.txt'), 'x', { mode: 0o644 });
    chmodSync(join(loose, 'notes.txt'), 0o644);
    const before = process.umask(0o022);
    try {
      for (const dataDir of [fresh, loose]) {
        const upstream = await createUpstream(
          loadUpstreamSettings({
            // Never connected: createUpstream only builds.
            UPSTREAM_DATABASE_URL: 'postgres://meshhub:meshhub@127.0.0.1:1/nothing',
            DATA_DIR: dataDir,
            WEB_ROOT: join(parent, 'no-web'),
          }),
          { log: pino({ level: 'silent' }), defaultMetrics: false },
        );
        await upstream.stop();
        expect(mode(dataDir)).toBe('700');
        for (const m of Object.values(modes(dataDir))) expect(m).toBe('600');
        expect(modes(dataDir)).toHaveProperty('jwt-signing-key.json', '600');
      }
    } finally {
      process.umask(before);
    }
  });

  // Only root can make a file another user owns; an unprivileged run skips this one.
  /** Runs secureDataDir(dataDir) as the unprivileged user nobody; prints its problem, if any. */
  function secureAsNobody(dataDir: string): string {
    const module = JSON.stringify(join(process.cwd(), 'dist', 'src', 'store', 'data-dir.js'));
    const run = spawnSync(
      'setpriv',
      [
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        process.execPath,
        '-e',
        `import(${module}).then((m) => { try { m.secureDataDir(${JSON.stringify(dataDir)}); console.log('ok'); } catch (e) { console.log(e.problems?.join('|') ?? e.message); } })`,
      ],
      { encoding: 'utf8' },
    );
    return run.stdout.trim();
  }

  // Only root can make a file another user owns; an unprivileged run skips these.
  const notRoot = process.getuid?.() !== 0 && noteSkip('root', 'only root can make files another user owns');
  it.skipIf(notRoot)('stops with one line naming a folder it cannot tighten', () => {
    const parent = tempDir();
    chmodSync(parent, 0o755);
    const dataDir = join(parent, 'data');
    mkdirSync(dataDir, { mode: 0o755 });
    chmodSync(dataDir, 0o755);
    // Owned by root: the hub runs as nobody.
    expect(secureAsNobody(dataDir)).toBe(
      `DATA_DIR: ${dataDir} is readable by other users (mode 755) and this user cannot change it; run as its owner, or chmod 700 it`,
    );
  });

  it.skipIf(notRoot)('leaves alone a private folder of another user (lost+found)', () => {
    const parent = tempDir();
    chmodSync(parent, 0o755);
    const dataDir = join(parent, 'data');
    mkdirSync(join(dataDir, 'lost+found'), { recursive: true });
    chmodSync(join(dataDir, 'lost+found'), 0o700);
    writeFileSync(join(dataDir, 'meshhub.sqlite'), '');
    chmodSync(join(dataDir, 'meshhub.sqlite'), 0o644);
    chownSync(dataDir, 65534, 65534);
    chownSync(join(dataDir, 'meshhub.sqlite'), 65534, 65534);
    expect(secureAsNobody(dataDir)).toBe('ok');
    expect(modes(dataDir)).toEqual({ 'lost+found': '700', 'meshhub.sqlite': '600' });
    expect(mode(dataDir)).toBe('700');
  });
});
