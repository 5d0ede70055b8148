/**
 * Idle RSS of the hub with the simulator connected vs a bare Node process that has loaded
 * better-sqlite3, hono and aedes (target: ≤ 1.4×). Both are separate processes, measured the
 * same way: VmRSS from /proc after they settle.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { HUB_NODE_FLAGS } from '../../hub/node-flags.js';
import { loopbackListeners } from './lib/hub-env.js';
import { freePort, root, settledRss, sleep, tempData } from './lib/hub-process.js';
import { type BenchResult, compare } from './report.js';

async function bareNode(): Promise<number> {
  const code = `
    const Database = require('better-sqlite3');
    const db = new Database(':memory:'); db.prepare('select 1').get();
    require('hono'); require('aedes');
    setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, ['-e', code], { cwd: root, stdio: 'ignore' });
  try {
    return await settledRss(child.pid!, 3_000);
  } finally {
    child.kill('SIGKILL');
  }
}

async function hub(): Promise<number> {
  const data = tempData('rss');
  const dataDir = data.dir;
  const port = await freePort();
  const child = spawn(process.execPath, [...HUB_NODE_FLAGS, join(root, 'dist', 'hub', 'cli.js'), 'start'], {
    cwd: root,
    env: {
      ...process.env,
      ...loopbackListeners(dataDir, port),
      RADIO: 'sim',
      SIM_PORT: '0',
      LOG_LEVEL: 'warn',
    },
    stdio: 'ignore',
  });
  try {
    const until = Date.now() + 20_000;
    for (;;) {
      const health = await fetch(`http://127.0.0.1:${port}/health`)
        .then((r) => r.json() as Promise<{ radio: { state: string } }>)
        .catch(() => undefined);
      if (health?.radio.state === 'connected') break;
      if (Date.now() > until) throw new Error('the hub did not connect to its simulator');
      await sleep(200);
    }
    // "Idle" means after start-up work (the replayed history) and after V8's memory reducer has
    // shrunk the young generation it grew for that work, which it does ~45 s into idleness.
    return await settledRss(child.pid!, 50_000);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    data.cleanup();
  }
}

export async function run(): Promise<BenchResult[]> {
  const baseline = await bareNode();
  const ours = await hub();
  return [
    compare(
      'idle RSS with the simulator connected',
      { label: 'bare node + better-sqlite3 + hono + aedes', value: baseline, unit: 'MB' },
      { label: 'meshhub start (RADIO=sim), idle', value: ours, unit: 'MB' },
      { atMost: 1.4, text: '≤ 1.4 × bare' },
    ),
  ];
}
