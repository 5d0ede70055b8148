/**
 * scripts/install-pi.sh's copy, run for real as root into a temporary prefix
 * (`MESHHUB_PREFIX=… install-pi.sh --copy-only`): from a checkout owned by an ordinary user,
 * with files anyone may write, and over an earlier install that kept that user as owner, the
 * code ends up owned by root and writable by root alone; local state is not copied.
 *
 * The `meshhub` command it installs (`install-pi.sh --command-only`, into temporary folders, over
 * this checkout's build): as root it runs the CLI as the `meshhub` user with the env file's
 * settings, stdin, stdout and exit codes passing through. The script creates the `meshhub` user
 * when there is none (CI runs as root); the test then removes it again.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HUB_NODE_FLAGS } from '../../hub/node-flags.js';
import { readVersion } from '../../src/version.js';
import { noteSkip } from '../helpers/skips.js';

const CHECKOUT_USER = 1234;
const dirs: string[] = [];

afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs.length = 0;
});

/** Every path under `dir` with its owner and mode. */
function tree(dir: string, prefix = ''): { path: string; uid: number; gid: number; mode: number }[] {
  const out: { path: string; uid: number; gid: number; mode: number }[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const stat = lstatSync(path);
    out.push({ path: `${prefix}${entry.name}`, uid: stat.uid, gid: stat.gid, mode: stat.mode & 0o7777 });
    if (entry.isDirectory()) out.push(...tree(path, `${prefix}${entry.name}/`));
  }
  return out;
}

const notRoot = process.getuid?.() !== 0 && noteSkip('root', 'install-pi.sh installs as root');

describe.skipIf(notRoot)('scripts/install-pi.sh as root', () => {
  it('copies the code owned by root and writable by root alone, whoever owned the checkout', () => {
    const root = mkdtempSync(join(tmpdir(), 'meshhub-install-'));
    dirs.push(root);
    // A checkout owned by an ordinary user, with a file and a folder anyone may write.
    const checkout = join(root, 'checkout');
    mkdirSync(join(checkout, 'scripts'), { recursive: true });
    mkdirSync(join(checkout, 'src'));
    mkdirSync(join(checkout, 'data'));
    mkdirSync(join(checkout, 'node_modules'));
    copyFileSync(join(process.cwd(), 'scripts', 'install-pi.sh'), join(checkout, 'scripts', 'install-pi.sh'));
    writeFileSync(join(checkout, 'package.json'), '{}');
    writeFileSync(join(checkout, 'src', 'main.js'), 'console.log(1)');
    writeFileSync(join(checkout, 'data', 'meshhub.sqlite'), 'local state');
    writeFileSync(join(checkout, 'node_modules', 'x.js'), '');
    chmodSync(join(checkout, 'src'), 0o777);
    chmodSync(join(checkout, 'src', 'main.js'), 0o666);
    for (const { path } of [{ path: '' }, ...tree(checkout)])
      chownSync(join(checkout, path), CHECKOUT_USER, CHECKOUT_USER);

    // An earlier install that kept the archive's owners.
    const prefix = join(root, 'opt', 'meshhub');
    mkdirSync(join(prefix, 'dist'), { recursive: true });
    writeFileSync(join(prefix, 'dist', 'old.js'), '');
    chmodSync(join(prefix, 'dist', 'old.js'), 0o666);
    for (const path of [prefix, join(prefix, 'dist'), join(prefix, 'dist', 'old.js')])
      chownSync(path, CHECKOUT_USER, CHECKOUT_USER);

    const run = spawnSync('bash', [join(checkout, 'scripts', 'install-pi.sh'), '--copy-only'], {
      env: { ...process.env, MESHHUB_PREFIX: prefix },
      encoding: 'utf8',
    });
    expect(run.status, run.stderr).toBe(0);

    const installed = tree(prefix);
    expect(installed.map((e) => e.path).sort()).toEqual([
      'dist',
      'dist/old.js',
      'package.json',
      'scripts',
      'scripts/install-pi.sh',
      'src',
      'src/main.js',
    ]);
    for (const entry of [{ path: '', ...lstatSync(prefix) }, ...installed]) {
      expect({ path: entry.path, uid: entry.uid, gid: entry.gid }).toEqual({
        path: entry.path,
        uid: 0,
        gid: 0,
      });
      expect({ path: entry.path, writableByOthers: (entry.mode & 0o022) !== 0 }).toEqual({
        path: entry.path,
        writableByOthers: false,
      });
    }
    const mode = (path: string) => (installed.find((e) => e.path === path)!.mode & 0o777).toString(8);
    expect(mode('src')).toBe('755');
    expect(mode('src/main.js')).toBe('644');
    expect(mode('scripts/install-pi.sh')).toBe('755');
  });

  it('refuses to run as anyone but root', () => {
    const run = spawnSync(
      'setpriv',
      [
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        'bash',
        join(process.cwd(), 'scripts', 'install-pi.sh'),
      ],
      { encoding: 'utf8', env: { ...process.env, MESHHUB_PREFIX: '/nonexistent/meshhub' } },
    );
    expect(run.status).toBe(1);
    expect(run.stderr).toBe('install-pi.sh: run as root (sudo)\n');
  });
});

/** What `sudo` leaves of root's environment (env_reset): no DATA_DIR, NODE_ENV or LOG_LEVEL. */
const SUDO_ENV = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/root' };

describe.skipIf(notRoot)('the meshhub command install-pi.sh installs', () => {
  const root = mkdtempSync(join(tmpdir(), 'meshhub-command-'));
  const prefix = join(root, 'opt', 'meshhub');
  const confDir = join(root, 'etc', 'meshhub');
  const binDir = join(root, 'bin');
  const command = join(binDir, 'meshhub');
  const dataDir = join(root, 'var', 'lib', 'meshhub');
  const installEnv = {
    ...process.env,
    MESHHUB_PREFIX: prefix,
    MESHHUB_CONF_DIR: confDir,
    MESHHUB_BIN_DIR: binDir,
  };
  let userExisted = true;
  let meshhubUid = -1;

  const install = (env: Record<string, string> = {}) =>
    spawnSync('bash', [join(process.cwd(), 'scripts', 'install-pi.sh'), '--command-only'], {
      env: { ...installEnv, ...env },
      encoding: 'utf8',
    });
  /** Runs the installed command as root with sudo's environment (or as the user `as`). */
  const meshhub = (
    args: string[],
    options: { input?: string; env?: Record<string, string>; as?: string } = {},
  ) => {
    const [file, argv] = options.as
      ? ['setpriv', [`--reuid=${options.as}`, `--regid=${options.as}`, '--init-groups', command, ...args]]
      : [command, args];
    return spawnSync(file, argv, {
      encoding: 'utf8',
      input: options.input,
      env: { ...SUDO_ENV, ...options.env },
    });
  };

  beforeAll(() => {
    userExisted = spawnSync('id', ['meshhub']).status === 0;
    // Everyone may pass through the scratch folders, as through / to /opt and /etc.
    chmodSync(root, 0o755);
    // The installed code: this checkout's build (npm run build), as in PREFIX/dist.
    mkdirSync(prefix, { recursive: true });
    symlinkSync(join(process.cwd(), 'dist'), join(prefix, 'dist'));
    const run = install();
    expect(run.status, run.stderr).toBe(0);
    meshhubUid = Number(spawnSync('id', ['-u', 'meshhub'], { encoding: 'utf8' }).stdout);
    const meshhubGid = Number(spawnSync('id', ['-g', 'meshhub'], { encoding: 'utf8' }).stdout);
    // The data folder as systemd's StateDirectory= makes it, the settings as install-pi.sh does.
    mkdirSync(join(dataDir, '..'), { recursive: true });
    mkdirSync(dataDir, { mode: 0o700 });
    chownSync(dataDir, meshhubUid, meshhubGid);
    mkdirSync(confDir, { recursive: true });
    const envFile = join(confDir, 'meshhub.env');
    writeFileSync(envFile, `# meshhub settings\nHTTP_PORT=8080\nDATA_DIR="${dataDir}"\nLOG_LEVEL=info\n`);
    chownSync(envFile, 0, meshhubGid);
    chmodSync(envFile, 0o640);
  });

  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
    if (!userExisted) spawnSync('userdel', ['meshhub']);
  });

  it("is a root-owned 0755 file that runs the CLI with the hub's V8 flags", () => {
    const stat = statSync(command);
    expect({ uid: stat.uid, gid: stat.gid, mode: (stat.mode & 0o7777).toString(8) }).toEqual({
      uid: 0,
      gid: 0,
      mode: '755',
    });
    expect(readFileSync(command, 'utf8')).toContain(` ${HUB_NODE_FLAGS.join(' ')} "$CLI" "$@"\n`);
    const run = meshhub(['--version']);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toBe(`${readVersion()}\n`);
  });

  it("adds a user from a password on stdin, in the env file's DATA_DIR, as the meshhub user", () => {
    const run = meshhub(['user', 'add', 'alice', '--password-stdin'], {
      input: 'correct horse battery staple',
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toBe('created user alice (subscriber)\n');
    expect(run.stderr).toContain(`created a new database ${join(dataDir, 'meshhub.sqlite')} (DATA_DIR)`);
    const files = tree(dataDir);
    expect(files.map((f) => f.path)).toContain('meshhub.sqlite');
    for (const file of [{ path: '', ...lstatSync(dataDir) }, ...files])
      expect({ path: file.path, uid: file.uid }).toEqual({ path: file.path, uid: meshhubUid });
  });

  it('prints only the token on stdout, and passes exit codes through', () => {
    const run = meshhub(['token', 'alice']);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\n$/);
    for (const file of tree(dataDir))
      expect({ path: file.path, uid: file.uid }).toEqual({ path: file.path, uid: meshhubUid });

    const missing = meshhub(['token', 'bob']);
    expect(missing.status).toBe(1);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toContain('meshhub token: no user "bob"');
  });

  it("takes a setting given on the command line over the env file's", () => {
    const elsewhere = join(root, 'elsewhere');
    const run = meshhub(['user', 'list'], { env: { DATA_DIR: elsewhere } });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`no hub database at ${join(elsewhere, 'meshhub.sqlite')} (DATA_DIR)`);
  });

  it('runs as is for the meshhub user, and tells anyone else to use sudo', () => {
    const own = meshhub(['user', 'list'], { as: 'meshhub' });
    expect(own.status, own.stderr).toBe(0);
    expect(own.stdout).toContain('alice');

    const other = meshhub(['user', 'list'], { as: '65534' });
    expect(other.status).toBe(1);
    expect(other.stdout).toBe('');
    expect(other.stderr).toBe(
      'meshhub: run it with sudo, as in: sudo meshhub <command> (it runs as the meshhub user)\n',
    );
  });

  it('says in one line when the installed code is missing', () => {
    const otherBin = join(root, 'other-bin');
    const run = install({ MESHHUB_PREFIX: join(root, 'nothing'), MESHHUB_BIN_DIR: otherBin });
    expect(run.status, run.stderr).toBe(0);
    const missing = spawnSync(join(otherBin, 'meshhub'), ['--version'], { encoding: 'utf8', env: SUDO_ENV });
    expect(missing.status).toBe(1);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toBe(
      `meshhub: ${join(root, 'nothing', 'dist', 'hub', 'cli.js')} is missing; run scripts/install-pi.sh again\n`,
    );
  });

  it('is rewritten when install-pi.sh runs again', () => {
    writeFileSync(command, '#!/bin/sh\necho stale\n');
    const run = install();
    expect(run.status, run.stderr).toBe(0);
    expect(meshhub(['--version']).stdout).toBe(`${readVersion()}\n`);
    expect((statSync(command).mode & 0o777).toString(8)).toBe('755');
  });
});
