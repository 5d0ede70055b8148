#!/usr/bin/env node
// `npm run release -- <major|minor|patch|x.y.z> [--no-image]`: cuts a release from a clean tree.
// Bumps VERSION (and package.json's and package-lock.json's version to match), moves CHANGELOG.md's
// Unreleased section under the new version with today's date (UTC), commits "Release x.y.z", tags
// vx.y.z, then builds the container image meshhub:x.y.z and :latest (scripts/container/build.sh)
// unless --no-image. Nothing is pushed: `git push --follow-tags` is yours to run.
// Plain JavaScript, like scripts/start.mjs: it needs no build.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const USAGE =
  'usage: npm run release -- <major|minor|patch|x.y.z> [--no-image]\n' +
  "  Bumps VERSION, dates CHANGELOG.md's Unreleased section, commits, tags vx.y.z and builds the image.\n";

function fail(line, code = 1) {
  process.stderr.write(`release: ${line}\n`);
  process.exit(code);
}

function git(...args) {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

const SEMVER = /^(\d+)\.(\d+)\.(\d+)$/;

/** The version after `current` for `bump` (major, minor, patch or an explicit x.y.z above it). */
export function nextVersion(current, bump) {
  const m = SEMVER.exec(current);
  if (!m) throw new Error(`VERSION holds "${current}", not x.y.z`);
  const [major, minor, patch] = m.slice(1).map(Number);
  if (bump === 'major') return `${major + 1}.0.0`;
  if (bump === 'minor') return `${major}.${minor + 1}.0`;
  if (bump === 'patch') return `${major}.${minor}.${patch + 1}`;
  const n = SEMVER.exec(bump);
  if (!n) throw new Error(`"${bump}" is not major, minor, patch or a version like 1.2.3`);
  const order = (v) =>
    v
      .slice(1)
      .map(Number)
      .reduce((acc, x) => acc * 100_000 + x, 0);
  if (order(n) <= order(m)) throw new Error(`${bump} is not above the current version ${current}`);
  return bump;
}

/** CHANGELOG text with the Unreleased section's entries under `## [version] - date`, and a new empty Unreleased. */
export function datedChangelog(text, version, date) {
  const heading = /^## \[Unreleased\][^\n]*\n/m;
  const found = heading.exec(text);
  if (!found) throw new Error('CHANGELOG.md has no "## [Unreleased]" section');
  const start = found.index + found[0].length;
  const nextSection = text.slice(start).search(/^## \[/m);
  const end = nextSection === -1 ? text.length : start + nextSection;
  const entries = text.slice(start, end).trim();
  if (entries === '') throw new Error("CHANGELOG.md's Unreleased section is empty: write what changed first");
  const rest = text.slice(end);
  return `${text.slice(0, found.index)}## [Unreleased]\n\n## [${version}] - ${date}\n\n${entries}\n${rest ? `\n${rest}` : ''}`;
}

function main(argv) {
  const args = argv.filter((a) => a !== '--no-image');
  const noImage = args.length !== argv.length;
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(USAGE);
    return;
  }
  const unknown = args.find((a) => a.startsWith('-'));
  if (unknown) fail(`unknown option ${unknown} (--no-image is the only one)`, 2);
  if (args.length !== 1) fail('name the release: major, minor, patch or a version like 1.2.3', 2);

  try {
    git('rev-parse', '--git-dir');
  } catch {
    fail(`${root} is not a git checkout`);
  }
  const dirty = git('status', '--porcelain');
  if (dirty !== '')
    fail('the working tree has uncommitted changes: commit or remove them first (git status)');

  const current = readFileSync(join(root, 'VERSION'), 'utf8').trim();
  let version;
  let changelog;
  const date = new Date().toISOString().slice(0, 10);
  try {
    version = nextVersion(current, args[0]);
    changelog = datedChangelog(readFileSync(join(root, 'CHANGELOG.md'), 'utf8'), version, date);
  } catch (error) {
    fail(error.message, 2);
  }
  if (git('tag', '--list', `v${version}`) !== '') fail(`the tag v${version} exists already`);

  writeFileSync(join(root, 'VERSION'), `${version}\n`);
  writeFileSync(join(root, 'CHANGELOG.md'), changelog);
  const files = ['VERSION', 'CHANGELOG.md'];
  for (const name of ['package.json', 'package-lock.json']) {
    const path = join(root, name);
    if (!existsSync(path)) continue;
    const json = JSON.parse(readFileSync(path, 'utf8'));
    json.version = version;
    if (json.packages?.['']) json.packages[''].version = version;
    writeFileSync(path, `${JSON.stringify(json, null, 2)}\n`);
    files.push(name);
  }
  git('add', '--', ...files);
  git('commit', '-q', '-m', `Release ${version}`);
  git('tag', '-a', `v${version}`, '-m', `meshhub ${version}`);
  process.stdout.write(`release: ${current} → ${version}, committed and tagged v${version}\n`);

  if (noImage) {
    process.stdout.write('release: image not built (--no-image); build it with scripts/container/build.sh\n');
  } else {
    const build = spawnSync('bash', [join(root, 'scripts', 'container', 'build.sh')], {
      cwd: root,
      stdio: 'inherit',
    });
    if (build.status !== 0) {
      fail(
        `the image did not build (the release v${version} is committed and tagged; run scripts/container/build.sh again)`,
      );
    }
  }
  process.stdout.write(`release: push it with: git push --follow-tags\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main(process.argv.slice(2));
