/**
 * The built `meshhub` command (dist/hub/cli.js) as a real process, for tests of what a person
 * sees: its exit code, stdout and stderr.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';

export const CLI = join(process.cwd(), 'dist', 'hub', 'cli.js');

/** Builds dist/ when it is stale (a test file's beforeAll; allow it a few minutes). */
export function buildCli(): void {
  const built = spawnSync(process.execPath, ['scripts/start.mjs', '--build-only'], { stdio: 'inherit' });
  if (built.status !== 0) throw new Error('building dist/ failed');
}

/** What `child` (spawned with stdout and stderr piped) has written to either, so far. */
export function outputOf(child: ChildProcess): () => string {
  let output = '';
  child.stdout?.on('data', (d) => (output += d));
  child.stderr?.on('data', (d) => (output += d));
  return () => output;
}

/**
 * For a test file of the built `meshhub` command (call at its top level): builds dist/ before its
 * tests and gives them a scratch folder (`<prefix>…` in the temp dir), removed after them.
 */
export function builtCliScratch(prefix: string): string {
  const root = mkdtempSync(join(tmpdir(), prefix));
  beforeAll(buildCli, 300_000);
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  return root;
}

export interface CliResult {
  /** null when it had to be killed: it did not end by itself within `timeoutMs`. */
  code: number | null;
  out: string;
  err: string;
}

export interface CliRun {
  env: Record<string, string | undefined>;
  cwd?: string;
  /** Written to stdin, which is then closed; undefined leaves stdin open (a reader would wait). */
  stdin?: string;
  timeoutMs?: number;
}

/** `meshhub …args` with exactly `run.env` (nothing of the test's own environment). */
export function meshhubCli(args: string[], run: CliRun): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: run.env,
      cwd: run.cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), run.timeoutMs ?? 60_000);
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
    if (run.stdin !== undefined) child.stdin.end(run.stdin);
  });
}

/**
 * `meshhub start` as a person runs it with `home` as HOME (the data folder inside it, no radio),
 * `env` on top and stdin closed: for the tests of a start that a bad setting refuses.
 */
export function startInHome(home: string, env: Record<string, string> = {}): Promise<CliResult> {
  return meshhubCli(['start'], {
    env: { PATH: process.env.PATH ?? '', HOME: home, DATA_DIR: join(home, 'data'), RADIO: 'none', ...env },
    stdin: '',
  });
}
