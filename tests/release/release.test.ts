/**
 * Cutting a release as a maintainer does (README "Releases"): `npm run release -- minor
 * --no-image` in a git checkout bumps VERSION, dates CHANGELOG.md's Unreleased section, commits
 * and tags; a dirty tree, a bad version word or an empty Unreleased section is refused in one
 * line and changes nothing. Each case runs scripts/release.mjs as a real process in a scratch
 * git repository holding copies of the files it edits. And `meshhub --version` / `-v` print
 * the VERSION file.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildCli, meshhubCli } from '../helpers/cli.js';

const ROOT = process.cwd();
const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'Release Test',
  GIT_AUTHOR_EMAIL: 'release@example.org',
  GIT_COMMITTER_NAME: 'Release Test',
  GIT_COMMITTER_EMAIL: 'release@example.org',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
};
const CHANGELOG = `# Changelog

## [Unreleased]

### Added

- Traceroutes.

## [0.1.0] - 2026-01-02

### Added

- The hub.
`;
const dirs: string[] = [];

afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8' }).trim();
}

/** A committed scratch checkout at version 0.1.0 with the release script and the files it edits. */
function checkout(changelog = CHANGELOG): string {
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-release-'));
  dirs.push(dir);
  mkdirSync(join(dir, 'scripts'));
  copyFileSync(join(ROOT, 'scripts', 'release.mjs'), join(dir, 'scripts', 'release.mjs'));
  writeFileSync(join(dir, 'VERSION'), '0.1.0\n');
  writeFileSync(join(dir, 'CHANGELOG.md'), changelog);
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ ...pkg, version: '0.1.0' }, null, 2)}\n`);
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'Start');
  return dir;
}

function release(dir: string, ...args: string[]) {
  const r = spawnSync(process.execPath, ['scripts/release.mjs', ...args], {
    cwd: dir,
    env: GIT_ENV,
    encoding: 'utf8',
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** Today's date (UTC), as the changelog heading carries it; two candidates around midnight. */
function todays(): string[] {
  return [new Date().toISOString().slice(0, 10), new Date(Date.now() - 60_000).toISOString().slice(0, 10)];
}

describe('npm run release', () => {
  it('bumps VERSION, dates the Unreleased entries, commits and tags vX.Y.Z', () => {
    const dir = checkout();
    const dates = todays();
    const r = release(dir, 'minor', '--no-image');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain('0.1.0 → 0.2.0');
    expect(readFileSync(join(dir, 'VERSION'), 'utf8')).toBe('0.2.0\n');
    expect(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version).toBe('0.2.0');
    const changelog = readFileSync(join(dir, 'CHANGELOG.md'), 'utf8');
    const heading = /^## \[0\.2\.0\] - (\d{4}-\d{2}-\d{2})$/m.exec(changelog);
    expect(dates).toContain(heading?.[1]);
    // The entries moved under the new version, an empty Unreleased above it, the old one kept.
    expect(changelog).toBe(
      CHANGELOG.replace('## [Unreleased]\n', `## [Unreleased]\n\n## [0.2.0] - ${heading?.[1]}\n`),
    );
    expect(git(dir, 'describe', '--exact-match', 'HEAD')).toBe('v0.2.0');
    expect(git(dir, 'log', '-1', '--format=%s')).toBe('Release 0.2.0');
    expect(git(dir, 'status', '--porcelain')).toBe('');
  });

  it('takes major, patch and an explicit higher version', () => {
    const dir = checkout();
    expect(release(dir, '1.0.0', '--no-image').code).toBe(0);
    writeFileSync(join(dir, 'CHANGELOG.md'), CHANGELOG.replace('## [0.1.0]', '## [1.0.0]'));
    git(dir, 'commit', '-qam', 'More');
    expect(release(dir, 'patch', '--no-image').code).toBe(0);
    expect(readFileSync(join(dir, 'VERSION'), 'utf8')).toBe('1.0.1\n');
    expect(git(dir, 'tag', '--list')).toBe('v1.0.0\nv1.0.1');
  });

  it('refuses a dirty tree in one line and changes nothing', () => {
    const dir = checkout();
    writeFileSync(join(dir, 'notes.txt'), 'not committed\n');
    const r = release(dir, 'patch', '--no-image');
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      'release: the working tree has uncommitted changes: commit or remove them first (git status)\n',
    );
    expect(readFileSync(join(dir, 'VERSION'), 'utf8')).toBe('0.1.0\n');
    expect(git(dir, 'tag', '--list')).toBe('');
    expect(git(dir, 'log', '--format=%s')).toBe('Start');
  });

  it.each([
    [['sideways'], '"sideways" is not major, minor, patch or a version like 1.2.3'],
    [['0.0.9'], '0.0.9 is not above the current version 0.1.0'],
    [[], 'name the release: major, minor, patch or a version like 1.2.3'],
    [['patch', '--push'], 'unknown option --push (--no-image is the only one)'],
  ])('refuses %j with one line naming what to give (exit 2)', (args, line) => {
    const dir = checkout();
    const r = release(dir, ...args, '--no-image');
    expect(r).toMatchObject({ code: 2, err: `release: ${line}\n` });
    expect(git(dir, 'tag', '--list')).toBe('');
  });

  it('refuses a release with nothing under Unreleased', () => {
    const dir = checkout(CHANGELOG.replace('### Added\n\n- Traceroutes.\n\n', ''));
    const r = release(dir, 'patch', '--no-image');
    expect(r).toMatchObject({
      code: 2,
      err: "release: CHANGELOG.md's Unreleased section is empty: write what changed first\n",
    });
    expect(readFileSync(join(dir, 'VERSION'), 'utf8')).toBe('0.1.0\n');
  });

  it("this repository's CHANGELOG.md has an Unreleased section the script can date", () => {
    const text = readFileSync(join(ROOT, 'CHANGELOG.md'), 'utf8');
    expect(text).toMatch(/^## \[Unreleased\]\n\n### /m);
  });
});

describe('meshhub --version', () => {
  beforeAll(() => buildCli(), 180_000);

  it.each([['--version'], ['-v'], ['version']])('%s prints the VERSION file and exits 0', async (flag) => {
    const version = readFileSync(join(ROOT, 'VERSION'), 'utf8').trim();
    const r = await meshhubCli([flag], { env: { PATH: process.env.PATH } });
    expect(r).toEqual({ code: 0, out: `${version}\n`, err: '' });
  });
});
