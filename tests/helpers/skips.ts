/**
 * Tests that cannot run on this machine because something they need is missing (PostgreSQL,
 * Redis, socat, root, …). Under CI (`CI=true`) a missing component FAILS the run, so CI never
 * passes with nothing tested; elsewhere the tests skip, each file records why here, and the run
 * ends with ONE line naming what was skipped and why (tests/global-setup.ts prints it).
 */
import { appendFileSync } from 'node:fs';
import { relative } from 'node:path';
import { expect, inject } from 'vitest';
import type { SkipRecord } from './skip-summary.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The file each test file appends its skips to (JSON lines), set by tests/global-setup.ts. */
    skipLog?: string;
  }
}

/**
 * Records that the calling test file skips tests because `need` is missing (`why`), and returns
 * true for `describe.skipIf(...)`. Use it for things CI may lack without failing (root).
 */
export function noteSkip(need: string, why: string): true {
  const file = relative(process.cwd(), expect.getState().testPath ?? 'unknown file');
  let log: string | undefined;
  try {
    log = inject('skipLog');
  } catch {
    log = undefined;
  }
  const record: SkipRecord = { need, why, file };
  if (log) appendFileSync(log, `${JSON.stringify(record)}\n`);
  else console.warn(`${file}: skipping tests that need ${need}: ${why}`);
  return true;
}

/**
 * Like noteSkip for a component CI installs (PostgreSQL, Redis, socat): under CI=true it throws,
 * so the run fails instead of passing with those tests skipped.
 */
export function skipBecauseMissing(need: string, why: string): true {
  if (process.env.CI === 'true') throw new Error(`CI=true and ${why}`);
  return noteSkip(need, why);
}
