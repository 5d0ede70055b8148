import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HUB_NODE_FLAGS } from '../../hub/node-flags.js';

/**
 * Issue 17: the hub runs with the same V8 flags however it is started (hub/node-flags.ts); V8
 * reads them only at start, so each way of starting must pass them itself.
 */
const root = process.cwd();
const flags = HUB_NODE_FLAGS.join(' ');

describe('the V8 flags the hub runs with', () => {
  it('npm start and npm run meshhub pass them to node', () => {
    const scripts = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts as Record<
      string,
      string
    >;
    expect(scripts.start).toBe(`node ${flags} scripts/start.mjs start`);
    expect(scripts.meshhub).toBe(`node ${flags} scripts/start.mjs`);
  });

  it('the systemd unit starts node with them', () => {
    const unit = readFileSync(join(root, 'systemd', 'meshhub.service'), 'utf8');
    const exec = unit.split('\n').filter((l) => l.startsWith('ExecStart='));
    expect(exec).toEqual([`ExecStart=/usr/bin/node ${flags} /opt/meshhub/dist/hub/cli.js start`]);
  });

  it('the meshhub command (an installed bin) carries them in its shebang, and runs', () => {
    const shebang = `#!/usr/bin/env -S node ${flags}`;
    expect(readFileSync(join(root, 'hub', 'cli.ts'), 'utf8').split('\n')[0]).toBe(shebang);
    expect(readFileSync(join(root, 'dist', 'hub', 'cli.js'), 'utf8').split('\n')[0]).toBe(shebang);
    // Run through the shebang, as `meshhub` on a PATH is: env -S splits the flags for node.
    const run = spawnSync(
      '/usr/bin/env',
      ['-S', `node ${flags}`, join(root, 'dist', 'hub', 'cli.js'), '--version'],
      {
        encoding: 'utf8',
      },
    );
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/\d+\.\d+\.\d+/);
  });

  it('node takes them: the young generation stays the size the flags fix, under load too', () => {
    const semi = Number(/--max-semi-space-size=(\d+)/.exec(flags)?.[1]);
    expect(flags).toContain(`--min-semi-space-size=${semi}`);
    const script = `
      const v8 = require('node:v8');
      const size = () => v8.getHeapSpaceStatistics().find((x) => x.space_name === 'new_space').space_size;
      const keep = [];
      for (let r = 0; r < 100; r++) for (let i = 0; i < 100000; i++) { const o = { i, s: 'x' + i }; if (i % 20 === 0) keep.push(o); if (keep.length > 100000) keep.length = 0; }
      console.log(size());`;
    const run = spawnSync(process.execPath, [...HUB_NODE_FLAGS, '-e', script], { encoding: 'utf8' });
    expect(run.status).toBe(0);
    // new_space counts both semi-spaces; by default this load takes it to 32 MB.
    expect(Number(run.stdout.trim())).toBeLessThanOrEqual(2 * semi * 2 ** 20);
  });
});
