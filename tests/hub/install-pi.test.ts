/**
 * scripts/install-pi.sh's copy, run for real as root into a temporary prefix
 * (`MESHHUB_PREFIX=… install-pi.sh --copy-only`): from a checkout owned by an ordinary user,
 * with files anyone may write, and over an earlier install that kept that user as owner, the
 * code ends up owned by root and writable by root alone; local state is not copied.
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
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
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
