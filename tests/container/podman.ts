/**
 * What the container tests share: podman with this machine's settings, a build step whose output
 * reaches the CI log, and `podman run -d` of an image with a volume and loopback ports, waited on
 * until its /health says ok (README "In a container").
 */
import { execFile, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { getJson, waitFor } from '../helpers/hub.js';

const run = promisify(execFile);
export const ROOT = process.cwd();
export const VERSION = readFileSync(join(ROOT, 'VERSION'), 'utf8').trim();
export const BASE = 'localhost/meshhub-base:bookworm-node20';
export const MQTT_CLI = join(ROOT, 'node_modules', 'mqtt', 'build', 'bin', 'mqtt.js');

/** Whether the container tests run at all: minutes long, so under CI=true or when asked. */
export const wanted = process.env.CI === 'true' || process.env.MESHHUB_CONTAINER_TEST === '1';
export const hasPodman = spawnSync('podman', ['--version']).status === 0;

/**
 * podman's settings for this machine (scripts/container/ci-containers-conf.sh: ulimits within
 * the host's, runc where cgroups are hybrid); an ordinary machine runs the same with them.
 */
export function podmanEnv(): NodeJS.ProcessEnv {
  if (process.env.CONTAINERS_CONF) return process.env;
  const conf = spawnSync('bash', ['scripts/container/ci-containers-conf.sh'], { encoding: 'utf8' });
  if (conf.status !== 0) throw new Error(`ci-containers-conf.sh failed: ${conf.stderr}`);
  return { ...process.env, CONTAINERS_CONF: conf.stdout.trim() };
}

let env: NodeJS.ProcessEnv = process.env;
/** Sets podman's environment once per file (in beforeAll: it runs a script). */
export function usePodmanEnv(): NodeJS.ProcessEnv {
  env = podmanEnv();
  return env;
}

export const podman = (...args: string[]) => run('podman', args, { env, maxBuffer: 16 * 1024 * 1024 });

/** podman with input on stdin (a password), its exit status and output kept for the assertion. */
export function podmanWithInput(input: string, ...args: string[]) {
  return spawnSync('podman', args, { env, input, encoding: 'utf8' });
}

/** Runs a build step with its output shown (a failing build must say why in the CI log). */
export function step(command: string, args: string[]): void {
  const result = spawnSync(command, args, { env, stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${result.status}`);
}

export interface Container {
  name: string;
  image: string;
  volume: string;
  httpPort: number;
  mqttPort: number;
  /** How long /health may take to say ok (longer under emulation). */
  healthWithinMs?: number;
}

/** `podman run -d` of the image with its volume and loopback ports, as the README runs it. */
export async function startContainer(c: Container): Promise<Record<string, unknown>> {
  await podman(
    ...['run', '-d', '--name', c.name, '-p', `127.0.0.1:${c.httpPort}:8080`],
    ...['-p', `127.0.0.1:${c.mqttPort}:1883`, '-v', `${c.volume}:/data`, c.image],
  );
  return waitFor(
    async () => {
      // 200 comes with "degraded" while the radio (the simulator) is still connecting.
      const answer = await getJson(`http://127.0.0.1:${c.httpPort}/health`).catch(() => undefined);
      return answer?.body?.status === 'ok' ? (answer.body as Record<string, unknown>) : undefined;
    },
    c.healthWithinMs ?? 120_000,
    '/health of the container to say ok',
  ).catch(async (error: Error) => {
    const logs = await podman('logs', c.name).catch(() => ({ stdout: '', stderr: '' }));
    throw new Error(`${error.message}; its log:\n${logs.stdout}${logs.stderr}`);
  });
}

export async function removeContainer(name: string): Promise<void> {
  await podman('rm', '-f', '-v', '-t', '15', name).catch(() => undefined);
}

/** Adds an MQTT login with the ingest role inside the container, as the README shows. */
export function addSensor(name: string, user: string, password: string) {
  return podmanWithInput(
    `${password}\n`,
    ...['exec', '-i', name, 'meshhub', 'user', 'add', user, '--roles', 'ingest', '--password-stdin'],
  );
}

/** Same as: mosquitto_pub -h 127.0.0.1 -p PORT -u USER -P … -q 1 -t meshhub/ingest/readings -m '…' */
export async function publishReading(mqttPort: number, user: string, password: string, reading: object) {
  await run(process.execPath, [
    MQTT_CLI,
    'pub',
    ...['-h', '127.0.0.1', '-p', String(mqttPort), '-q', '1', '-u', user, '-P', password],
    ...['-t', 'meshhub/ingest/readings', '-m', JSON.stringify(reading)],
  ]);
}
