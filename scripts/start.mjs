#!/usr/bin/env node
// Runs the built `meshhub` command, building dist/ first when it is missing or older than any
// source file (so `npm start` works on a fresh checkout and after every edit).
// Plain JavaScript on purpose: it must run before anything is compiled.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stamp = join(root, 'dist', '.tsbuildinfo');
const entry = join(root, 'dist', 'hub', 'cli.js');

function newestMtime(path) {
  let newest = 0;
  const st = statSync(path, { throwIfNoEntry: false });
  if (!st) return 0;
  if (!st.isDirectory()) return st.mtimeMs;
  for (const name of readdirSync(path)) {
    if (name === 'node_modules' || name === 'web') continue;
    newest = Math.max(newest, newestMtime(join(path, name)));
  }
  return newest;
}

function stale() {
  if (!existsSync(entry) || !existsSync(stamp)) return true;
  const built = statSync(stamp).mtimeMs;
  const inputs = [
    'src',
    'hub',
    'plugins',
    'sync',
    'scripts',
    'tsconfig.json',
    'tsconfig.build.json',
    'package.json',
  ];
  return inputs.some((p) => newestMtime(join(root, p)) > built);
}

const args = process.argv.slice(2);
const buildOnly = args[0] === '--build-only';
if (stale()) {
  process.stderr.write('meshhub: building (tsc)...\n');
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  // The build's output goes to stderr: stdout is the command's (`TOKEN=$(npm run -s meshhub -- token alice)`).
  const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], {
    stdio: ['inherit', 2, 'inherit'],
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
  // tsc leaves its build info untouched when nothing changed; mark the build fresh anyway.
  const now = new Date();
  utimesSync(stamp, now, now);
}
// The web app (src/web, built by Vite into dist/web): rebuilt when missing or older than its sources.
const webIndex = join(root, 'dist', 'web', 'index.html');
function webStale() {
  if (!existsSync(webIndex)) return true;
  const built = statSync(webIndex).mtimeMs;
  return [join(root, 'src', 'web'), join(root, 'package.json')].some((p) => newestMtime(p) > built);
}
if (webStale()) {
  const vite = join(root, 'node_modules', 'vite', 'bin', 'vite.js');
  if (existsSync(vite)) {
    process.stderr.write('meshhub: building the web app (vite)...\n');
    const result = spawnSync(
      process.execPath,
      [vite, 'build', '--config', join(root, 'src', 'web', 'vite.config.ts')],
      { stdio: ['inherit', 2, 'inherit'] },
    );
    if (result.status !== 0) process.exit(result.status ?? 1);
  } else if (!existsSync(webIndex)) {
    process.stderr.write(
      'meshhub: the web app is not built and vite is not installed; serving the API only\n',
    );
  }
}
if (!buildOnly) {
  // Import rather than spawn: one process, so signals reach the hub directly.
  process.argv = [process.argv[0], entry, ...args];
  await import(entry);
}
