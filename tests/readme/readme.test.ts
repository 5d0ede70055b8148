/**
 * The README's commands work as printed (issue 25). Every ```sh block of README.md that can run
 * on this machine runs in bash, in README order, against a real hub started with `npm start` on
 * the simulator (default SIM_SEED), with a scratch DATA_DIR and free loopback ports. The only
 * changes to the text are `localhost:8080` → the hub's HTTP port and `-p 1883` → its MQTT port;
 * everything else reaches the commands through the environment, as it would in a terminal.
 *
 * A block whose last command is `npm start` starts a second hub (its own DATA_DIR and ports): it
 * must serve /health, and is then stopped.
 *
 * Each block must exit 0 (bash -e -o pipefail; curl fails on an HTTP error status), must not
 * trip bash's history expansion (a `!` inside double quotes breaks a pasted command), the weather
 * and node reads must return data, and a `# → {…}` comment's written-out values must be in the
 * answer of the curl call it follows. Blocks marked `<!-- readme-test: skip (why) -->` are listed.
 * The README is read when the test runs, so changed command words need no change here.
 */
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, getJson, waitFor } from '../helpers/hub.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../helpers/postgres.js';
import { skipBecauseMissing } from '../helpers/skips.js';
import { expectations, holdsPair, type ReadmeBlock, readmeBlocks, runOrder } from './blocks.js';

const ROOT = process.cwd();
const blocks = readmeBlocks(readFileSync(join(ROOT, 'README.md'), 'utf8'));
const runnable = runOrder(blocks);
/** The simulator's weather station with the default SIM_SEED=1 (the README's example node). */
const README_NODE = '!ac79095b';

const whichCurl = ['/usr/bin/curl', '/usr/local/bin/curl', '/bin/curl'].find((p) => existsSync(p));
const noCurl = !whichCurl && skipBecauseMissing('curl', 'not installed (apt-get install curl)');
const noPostgres = runnable.some((b) => b.needsPostgres) ? await skipWithoutPostgres() : false;

let work: string;
let calls: string;
let env: Record<string, string>;
let hub: ChildProcess | undefined;
let hubLog = '';
let httpPort: number;
let mqttPort: number;
let schema: TestSchema | undefined;

/** A curl that fails on an HTTP error status and records each call (args, answer, exit code). */
const CURL_SHIM = `#!/usr/bin/env bash
call="$README_TEST_CALLS/$(printf '%04d' "$(ls "$README_TEST_CALLS" | wc -l)")"
mkdir "$call"
printf '%s\\n' "$@" > "$call/args"
"$README_TEST_REAL_CURL" "$README_TEST_CURL_FAIL" "$@" > "$call/out"
rc=$?
echo "$rc" > "$call/rc"
cat "$call/out"
exit "$rc"
`;

beforeAll(async () => {
  if (noCurl) return;
  // A scratch checkout: the project's files linked in, so npm finds package.json here and the
  // files the commands write (session.json, north.jwks.json, …) stay out of the real one.
  work = mkdtempSync(join(tmpdir(), 'meshhub-readme-'));
  for (const name of ['package.json', 'scripts', 'node_modules', 'dist']) {
    symlinkSync(join(ROOT, name), join(work, name));
  }
  const bin = join(work, '.readme-bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'curl'), CURL_SHIM);
  chmodSync(join(bin, 'curl'), 0o755);
  calls = join(work, '.readme-calls');
  mkdirSync(calls);
  [httpPort, mqttPort] = [await freePort(), await freePort()];
  if (!noPostgres && runnable.some((b) => b.needsPostgres)) schema = await createTestSchema('readme');
  const { CI: _ci, ...inherited } = process.env as Record<string, string>;
  env = {
    ...inherited,
    PATH: `${bin}:${process.env.PATH}`,
    README_TEST_CALLS: calls,
    README_TEST_REAL_CURL: whichCurl!,
    // curl before 7.76 (Debian 11) has --fail only, which drops the error's body.
    README_TEST_CURL_FAIL: spawnSync(whichCurl!, ['--help', 'all'], { encoding: 'utf8' }).stdout.includes(
      '--fail-with-body',
    )
      ? '--fail-with-body'
      : '--fail',
    DATA_DIR: join(work, 'data'),
    HTTP_HOST: '127.0.0.1',
    HTTP_PORT: String(httpPort),
    MQTT_PORT: String(mqttPort),
    MESH_API_PORT: String(await freePort()),
    RADIO: 'sim',
    SIM_PORT: '0',
    // The audit plugin, on loopback without sign-in, for the README's audit reads.
    PLUGINS: 'audit',
    AUDIT_FETCH_ON_START: 'false',
    LOG_LEVEL: 'warn',
    ...(schema ? { UPSTREAM_DATABASE_URL: schema.url } : {}),
  };
  // The hub as the README's first command starts it.
  hub = spawn('npm', ['start'], { cwd: work, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const keep = (d: Buffer) => {
    hubLog += d.toString();
  };
  hub.stdout!.on('data', keep);
  hub.stderr!.on('data', keep);
  // Ready when the simulator's day of history is in: the README's node has readings and every
  // simulated node is known.
  await waitFor(
    async () => {
      if (hub!.exitCode !== null) throw new Error(`npm start exited ${hub!.exitCode}:\n${hubLog}`);
      const latest = await getJson(`http://127.0.0.1:${httpPort}/api/v1/weather/latest`).catch(
        () => undefined,
      );
      const nodes = await getJson(`http://127.0.0.1:${httpPort}/api/v1/nodes`).catch(() => undefined);
      return (
        latest?.body?.data?.some((r: { node_id: string }) => r.node_id === README_NODE) &&
        (nodes?.body?.data?.length ?? 0) >= 7
      );
    },
    60_000,
    () => `the hub from npm start to serve the simulator's readings\n${hubLog}`,
  );
}, 120_000);

afterAll(async () => {
  if (hub?.pid && hub.exitCode === null) {
    const exited = new Promise((r) => hub!.once('exit', r));
    process.kill(-hub.pid, 'SIGTERM');
    await exited;
  }
  await schema?.drop();
  if (work) rmSync(work, { recursive: true, force: true });
});

interface Call {
  args: string[];
  out: string;
  rc: number;
}

function recordedCalls(): Call[] {
  return readdirSync(calls)
    .sort()
    .map((name) => {
      const dir = join(calls, name);
      const read = (f: string) => (existsSync(join(dir, f)) ? readFileSync(join(dir, f), 'utf8') : '');
      return { args: read('args').split('\n').slice(0, -1), out: read('out'), rc: Number(read('rc') || -1) };
    });
}

/** The two clear substitutions: the hub's HTTP and MQTT ports. */
function localized(code: string): string {
  return code.replaceAll('localhost:8080', `127.0.0.1:${httpPort}`).replaceAll('-p 1883', `-p ${mqttPort}`);
}

function runBlock(block: ReadmeBlock): Promise<{ code: number; stdout: string; stderr: string }> {
  for (const name of readdirSync(calls)) rmSync(join(calls, name), { recursive: true });
  const script = join(work, `.readme-block-${block.line}.sh`);
  writeFileSync(script, `set -e -o pipefail\nset -o history -H\n${localized(block.code)}\n`);
  return new Promise((resolve) => {
    execFile(
      'bash',
      [script],
      { cwd: work, env, timeout: 60_000, maxBuffer: 16 << 20 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** A block whose last command starts a hub, as `HTTP_ALLOWED_HOSTS=… npm start`. */
const STARTS_HUB = /(^|\s)npm start\s*(#.*)?$/;

function lastCommand(code: string): string {
  const commands = code
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.trim().startsWith('#'));
  return commands.at(-1) ?? '';
}

/** Runs a block that starts a hub, on ports and a DATA_DIR of its own; stops it once it answers. */
async function runHubBlock(block: ReadmeBlock): Promise<void> {
  const script = join(work, `.readme-block-${block.line}.sh`);
  writeFileSync(script, `set -e -o pipefail\nset -o history -H\n${localized(block.code)}\n`);
  const port = await freePort();
  const own = {
    ...env,
    DATA_DIR: join(work, `data-${block.line}`),
    HTTP_PORT: String(port),
    MQTT_PORT: String(await freePort()),
    MESH_API_PORT: String(await freePort()),
  };
  const child = spawn('bash', [script], {
    cwd: work,
    env: own,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const keep = (d: Buffer) => {
    log += d.toString();
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null)
          throw new Error(`README.md line ${block.line} exited ${child.exitCode}:\n${log}`);
        const health = await getJson(`http://127.0.0.1:${port}/health`).catch(() => undefined);
        return health?.status === 200;
      },
      60_000,
      () => `README.md line ${block.line}: the hub to answer /health\n${log}`,
    );
  } finally {
    if (child.exitCode === null) process.kill(-child.pid!, 'SIGTERM');
  }
  await exited;
}

const READS = /\/api\/v1\/(weather\/(latest|history)|nodes)(\?|$)/;

describe.skipIf(noCurl)("README.md's shell blocks", () => {
  it('lists the blocks that cannot run here, each with its reason', () => {
    const skipped = blocks.filter((b) => b.skip);
    console.log(
      `README blocks not run (${skipped.length}):\n${skipped.map((b) => `  line ${b.line} (${b.heading}): ${b.skip}`).join('\n')}`,
    );
    expect(runnable.length).toBeGreaterThan(0);
    for (const b of skipped) expect(b.skip, `README.md line ${b.line}`).not.toBe('');
  });

  for (const block of runnable) {
    const skip = block.needsPostgres && noPostgres;
    it.skipIf(skip)(
      `line ${block.line} (${block.heading}) runs as printed`,
      async () => {
        if (STARTS_HUB.test(lastCommand(block.code))) return runHubBlock(block);
        const { code, stdout, stderr } = await runBlock(block);
        const context = `README.md line ${block.line}\n--- stdout\n${stdout.slice(-3000)}\n--- stderr\n${stderr.slice(-3000)}`;
        expect(stderr, context).not.toMatch(/event not found/);
        expect(code, context).toBe(0);
        const made = recordedCalls();
        for (const call of made) {
          expect(call.rc, `${context}\ncurl ${call.args.join(' ')}`).toBe(0);
          const url = call.args.find((a) => a.includes('/api/') || a.startsWith('http'));
          if (url && READS.test(url) && !call.args.includes('POST')) {
            expect(
              JSON.parse(call.out).data?.length ?? 0,
              `curl ${url} returned no data\n${context}`,
            ).toBeGreaterThan(0);
          }
        }
        for (const { call, pairs } of expectations(block.code)) {
          const answer = made[call];
          expect(answer, `the curl call before a "# →" comment\n${context}`).toBeDefined();
          const parsed = JSON.parse(answer!.out);
          for (const [key, value] of pairs) {
            expect(
              holdsPair(parsed, key, value),
              `"${key}":${JSON.stringify(value)} in ${answer!.out}\n${context}`,
            ).toBe(true);
          }
        }
      },
      90_000,
    );
  }
});
