import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { readSkipLog, skipSummary } from './helpers/skip-summary.js';

/**
 * Several test files run the built hub (dist/), as `npm start` does. Build it once here, before
 * any file runs, so parallel files never race one another's tsc; their own build calls then find
 * dist/ fresh and return at once.
 *
 * Test files that skip for something missing here (PostgreSQL, Redis, …: tests/helpers/skips.ts)
 * write why to a log this setup hands them; the run ends with one line saying what was skipped.
 */
export default function setup(project: TestProject): () => void {
  const result = spawnSync(process.execPath, ['scripts/start.mjs', '--build-only'], { stdio: 'inherit' });
  if (result.status !== 0) throw new Error('building dist/ failed: see the tsc output above');
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-skips-'));
  const log = join(dir, 'skips.jsonl');
  project.provide('skipLog', log);
  return () => {
    const line = skipSummary(readSkipLog(log));
    rmSync(dir, { recursive: true, force: true });
    if (line) process.stdout.write(`\n${line}\n`);
  };
}
