/**
 * A real Redis for the cache-store tests (issue 13, CACHE_URL): Debian's `redis-server`, started
 * per test file on a free loopback port, with persistence off, and stopped afterwards.
 *
 * When `redis-server` is not installed: under CI (`CI=true`) the tests FAIL; elsewhere they skip,
 * and the run ends with one line saying why (tests/helpers/skips.ts).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createServer, Socket } from 'node:net';
import { skipBecauseMissing } from './skips.js';

export const REDIS_SERVER = process.env.REDIS_SERVER ?? 'redis-server';

/** Why Redis cannot be started here, or undefined when it can. */
export function redisUnavailable(): string | undefined {
  const probe = spawnSync(REDIS_SERVER, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    return `${REDIS_SERVER} is not installed (apt-get install redis-server): ${probe.error?.message ?? probe.stderr}`;
  }
  return undefined;
}

/** For `describe.skipIf(...)`: true when the tests must skip; under CI a missing server throws. */
export function skipWithoutRedis(): boolean {
  const why = redisUnavailable();
  return why ? skipBecauseMissing('Redis', why) : false;
}

export interface TestRedis {
  url: string;
  port: number;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

async function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.setTimeout(500);
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.connect(port, '127.0.0.1', () => socket.write('PING\r\n'));
    socket.once('data', (d) => {
      socket.destroy();
      resolve(d.toString().startsWith('+PONG'));
    });
  });
}

export async function startRedis(): Promise<TestRedis> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    REDIS_SERVER,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--protected-mode',
      'yes',
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  for (let i = 0; i < 200; i++) {
    if (await answersPing(port)) {
      return {
        url: `redis://127.0.0.1:${port}`,
        port,
        async stop() {
          child.kill('SIGTERM');
          await exited;
        },
      };
    }
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  child.kill('SIGKILL');
  throw new Error(`redis-server did not answer on 127.0.0.1:${port}`);
}
