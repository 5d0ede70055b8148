/**
 * One hub per DATA_DIR (src/store/data-dir-lock.ts): the lock a hub takes, the refusal naming the
 * holder, and the check CLI commands can make. Across processes (and SIGKILL) it is tested in
 * tests/hub/startup-failures.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { StartupFailure } from '../../src/kernel/startup-failure.js';
import { dataDirHolder, lockDataDir } from '../../src/store/data-dir-lock.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

it('holds DATA_DIR until released; a second taker is refused by name and pid', () => {
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-lock-'));
  dirs.push(dir);
  expect(dataDirHolder(dir)).toBeUndefined();
  const lock = lockDataDir(dir);
  expect(dataDirHolder(dir)).toEqual({ pid: process.pid });
  expect(() => lockDataDir(dir)).toThrow(StartupFailure);
  expect(() => lockDataDir(dir)).toThrow(
    `DATA_DIR=${dir} is in use by another meshhub (pid ${process.pid}): stop it, or set DATA_DIR to another folder`,
  );
  lock.release();
  lock.release();
  expect(dataDirHolder(dir)).toBeUndefined();
  lockDataDir(dir).release();
});

it('a DATA_DIR that does not exist has no holder', () => {
  expect(dataDirHolder(join(tmpdir(), 'meshhub-lock-none', 'data'))).toBeUndefined();
});
