/** The topology's settings at start-up: a bad value is one plain line naming the setting, and the hub does not start. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startInHome } from '../helpers/cli.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('TRACEROUTE_TIMEOUT and TOPOLOGY_RETENTION_DAYS', () => {
  it('out of range: `meshhub start` exits 1 naming each setting and what it takes, with no stack trace', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'meshhub-topology-'));
    dirs.push(dir);
    const result = await startInHome(dir, { TRACEROUTE_TIMEOUT: '2s', TOPOLOGY_RETENTION_DAYS: '0' });
    expect(result.code).toBe(1);
    expect(result.err).toContain('TRACEROUTE_TIMEOUT: must be from 5s to 10m, e.g. 60s (got "2s")');
    expect(result.err).toContain('TOPOLOGY_RETENTION_DAYS: must be a whole number from 1 to 3650 (got "0")');
    expect(result.err).not.toMatch(/\n\s+at /);
  });
});
