/**
 * The benchmarks that put "ours" and a bare baseline in one child process: the parent forks it and
 * waits for the two base URLs; the child serves both apps on loopback ports and exits when the
 * parent disconnects.
 */
import { type ChildProcess, fork } from 'node:child_process';
import type { Hono } from 'hono';
import { serveOnLoopback } from './http.js';

export interface ServerChild {
  child: ChildProcess;
  ours: string;
  bare: string;
}

/** Forks `modulePath` with `args`; resolves with the `{ ours, bare }` it sends. `name` is for the error. */
export function forkServers(modulePath: string, args: string[], name: string): Promise<ServerChild> {
  const child = fork(modulePath, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (message) => resolve({ child, ...(message as { ours: string; bare: string }) }));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the ${name} server exited with ${code}`)));
  });
}

/** Ends a forked server child (by disconnecting, which it answers by exiting) and waits for it. */
export async function stopServers(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  if (child.connected) child.disconnect();
  else child.kill();
  await exited;
}

/** In the child: serves both apps, sends their base URLs, and on disconnect closes them, runs `cleanup` and exits. */
export async function serveForParent(ours: Hono, bare: Hono, cleanup: () => void = () => {}): Promise<void> {
  if (!process.send) throw new Error('run forked by a benchmark');
  const servers = [await serveOnLoopback(ours), await serveOnLoopback(bare)];
  process.send({ ours: servers[0]!.url, bare: servers[1]!.url });
  process.on('disconnect', () => {
    void Promise.all(servers.map((s) => s.close())).finally(() => {
      cleanup();
      process.exit(0);
    });
  });
}
