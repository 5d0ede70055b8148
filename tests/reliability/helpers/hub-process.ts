/**
 * The reliability suite's harness: the built hub (`dist/hub/cli.js start`, as `npm start` runs
 * it) as a child process that the test SIGKILLs and starts again on the same data directory and
 * ports, the seed every scenario draws its schedule from, and the small readers the scenarios
 * share. Modelled on tests/sync/integration/kill-restart.test.ts.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HUB_NODE_FLAGS } from '../../../hub/node-flags.js';
import { seededRandom } from '../../../src/mesh/simulator/random.js';
import { restartablePort, waitFor } from '../../helpers/hub.js';
import { call } from '../../messaging/helpers.js';

export const CLI = join(process.cwd(), 'dist', 'hub', 'cli.js');

/**
 * The seed of a scenario: RELIABILITY_SEED repeats a run; otherwise a fresh one, printed, so
 * every CI run tries another schedule and any failure can be replayed.
 */
export function scenarioSeed(scenario: string): number {
  const fixed = process.env.RELIABILITY_SEED;
  const seed = fixed !== undefined && fixed !== '' ? Number(fixed) : Math.floor(Math.random() * 1_000_000);
  if (!Number.isInteger(seed)) throw new Error(`RELIABILITY_SEED must be an integer, not ${fixed}`);
  console.log(`[reliability] ${scenario}: seed ${seed} (repeat with RELIABILITY_SEED=${seed})`);
  return seed;
}

/** A seeded schedule: the same draws for the same seed. */
export function schedule(seed: number) {
  const random = seededRandom(seed);
  return {
    random,
    /** An integer in [lo, hi). */
    between: (lo: number, hi: number) => Math.floor(lo + random() * (hi - lo)),
  };
}

/**
 * A kill scenario: its seed (printed, so that a failure can be replayed), how many times it kills
 * (RELIABILITY_KILL_ROUNDS, 24 by default) and its seeded random waits.
 */
export function killScenario(name: string) {
  const seed = scenarioSeed(name);
  return { seed, rounds: Number(process.env.RELIABILITY_KILL_ROUNDS ?? 24), ...schedule(seed) };
}

/** A hub on its simulator, replaying no history and hearing each node's telemetry once a day. */
export const QUIET_SIM: Readonly<Record<string, string>> = {
  RADIO: 'sim',
  SIM_PORT: '0',
  SIM_BACKFILL: '0s',
  SIM_TELEMETRY_SECONDS: '86400',
};

/**
 * A hub on the radio at `radioPort` that sends texts at once and often (no airtime budget, no
 * retry delay, a 3 s ack timeout, rates far above what a test sends), with carol a subscriber
 * to every node; started. `token` is carol's.
 */
export async function startSendingHub(
  dataDir: string,
  radioPort: number,
): Promise<{ hub: HubProcess; token: string }> {
  const hub = new HubProcess({
    dataDir,
    env: {
      RADIO: `tcp:127.0.0.1:${radioPort}`,
      MESSAGE_AIRTIME_PERCENT: '100',
      MESSAGE_RETRY_DELAY: '0s',
      MESSAGE_ACK_TIMEOUT: '3s',
      MESSAGE_RATE_PER_SUBSCRIBER: '1000/1m',
      MESSAGE_RATE_PER_NODE: '1000/1m',
    },
  });
  const token = hub.userToken('carol', ['subscriber']);
  hub.cli(['subscription', 'grant', 'carol', '--nodes', 'all']);
  await hub.start();
  return { hub, token };
}

/**
 * Waits (20 s at most) until `hub` lists `count` nodes or more to the holder of `token`: it has had
 * the radio's node database.
 */
export async function waitForNodes(hub: HubProcess, token: string, count: number): Promise<void> {
  await waitFor(
    async () => {
      const r = await call(hub.baseUrl, 'GET', '/api/v1/nodes', { token });
      return r.status === 200 && (r.body.data as unknown[]).length >= count ? true : undefined;
    },
    20_000,
    'the nodes known to the hub',
  );
}

export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function scratchDir(name: string): string {
  return mkdtempSync(join(tmpdir(), `meshhub-rel-${name}-`));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export interface HubProcessOptions {
  dataDir: string;
  /** Extra environment (RADIO, MQTT_*, MESSAGE_*, NODE_OPTIONS, …). */
  env?: Record<string, string>;
  name?: string;
}

/**
 * One hub, restarted as often as the test likes on the same DATA_DIR, HTTP and MQTT ports.
 * Its output is kept (the last 400 lines) for failure messages.
 */
export class HubProcess {
  readonly logs: string[] = [];
  httpPort = 0;
  mqttPort = 0;
  meshApiPort = 0;
  starts = 0;
  private proc: ChildProcess | undefined;

  constructor(private readonly options: HubProcessOptions) {}

  get baseUrl(): string {
    return `http://127.0.0.1:${this.httpPort}`;
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  get running(): boolean {
    return this.proc !== undefined && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  env(): Record<string, string> {
    return {
      DATA_DIR: this.options.dataDir,
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(this.httpPort),
      MQTT_PORT: String(this.mqttPort),
      MESH_API_PORT: String(this.meshApiPort),
      LOG_LEVEL: 'warn',
      ...this.options.env,
    };
  }

  /** Starts the hub and waits until /health answers 200 (`ok` or `degraded`). */
  async start(extraEnv: Record<string, string> = {}, timeoutMs = 30_000): Promise<number> {
    if (this.running) throw new Error('the hub is already running');
    if (!this.httpPort) {
      // Below the ephemeral range: no other process's outgoing connection takes them while the
      // hub is down between a kill and its restart.
      this.httpPort = await restartablePort();
      this.mqttPort = await restartablePort();
      this.meshApiPort = await restartablePort();
    }
    const began = Date.now();
    const name = this.options.name ?? 'hub';
    const proc = spawn(process.execPath, [...HUB_NODE_FLAGS, CLI, 'start'], {
      env: { ...process.env, ...this.env(), ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.proc = proc;
    this.starts++;
    const keep = (d: Buffer) => {
      for (const line of d.toString().trimEnd().split('\n')) this.logs.push(`[${name}] ${line}`);
      while (this.logs.length > 400) this.logs.shift();
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    await waitFor(
      async () => {
        if (proc.exitCode !== null) throw new Error(`the hub exited (${proc.exitCode}):\n${this.tail()}`);
        return (await fetch(`${this.baseUrl}/health`).catch(() => undefined))?.ok || undefined;
      },
      timeoutMs,
      () => `the hub answering /health\n${this.tail()}`,
    );
    return Date.now() - began;
  }

  /** SIGKILL: no shutdown code runs, as when the power goes. */
  kill(): Promise<void> {
    return this.signalAndWait('SIGKILL');
  }

  /** SIGTERM and wait for the clean stop. */
  stop(): Promise<void> {
    return this.signalAndWait('SIGTERM');
  }

  /** Sends `signal` to the running hub and resolves once it has exited (at once when none runs). */
  private async signalAndWait(signal: NodeJS.Signals): Promise<void> {
    const proc = this.proc;
    if (!proc || !this.running) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill(signal);
    await exited;
  }

  tail(lines = 40): string {
    return this.logs.slice(-lines).join('\n');
  }

  /** Runs another `meshhub` command on this hub's data directory (user, token, subscription). */
  cli(args: string[], input?: string): string {
    const result = spawnSync(process.execPath, [CLI, ...args], {
      env: { ...process.env, ...this.env() },
      input,
      encoding: 'utf8',
    });
    if (result.status !== 0)
      throw new Error(
        `meshhub ${args.join(' ')} failed (${result.status}): ${result.stderr}${result.stdout}`,
      );
    return result.stdout.trim();
  }

  /** A user with `roles`, and a token for it (valid across restarts: the keys live in DATA_DIR). */
  userToken(name: string, roles: string[], password = `${name}-password-1`): string {
    this.cli(['user', 'add', name, '--roles', roles.join(','), '--password-stdin'], `${password}\n`);
    return this.cli(['token', name, '--ttl', '2h']).split('\n').pop()!.trim();
  }
}

/** Least-squares slope of y over x (for the soak's flatness test). */
export function slope(points: { x: number; y: number }[]): number {
  const n = points.length;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.x - mx) * (p.y - my);
    den += (p.x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}
