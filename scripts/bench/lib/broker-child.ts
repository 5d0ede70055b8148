/**
 * The MQTT benchmarks' broker child: a benchmark file forks itself (a role in `env`), the child
 * starts a broker and sends its port, and stops when the parent disconnects.
 */
import { type ChildProcess, fork } from 'node:child_process';

export interface BrokerChild {
  process: ChildProcess;
  port: number;
  stop(): Promise<void>;
}

/**
 * Forks `modulePath` with `env` added; with `cpuProfileDir`, a V8 CPU profile of the child is
 * written there. Resolves with the port it sends. `name` is for the error.
 */
export function forkBrokerChild(
  modulePath: string,
  env: Record<string, string>,
  cpuProfileDir: string | undefined,
  name: string,
): Promise<BrokerChild> {
  const child = fork(modulePath, [], {
    env: { ...process.env, ...env },
    execArgv: cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfileDir}`] : [],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}`)));
    child.once('message', (message) => {
      const { port } = message as { port: number };
      child.removeAllListeners('exit');
      resolve({
        process: child,
        port,
        stop: () =>
          new Promise((done) => {
            if (child.exitCode !== null) return done();
            child.once('exit', () => done());
            child.disconnect();
          }),
      });
    });
  });
}

/** In the child: sends `port` to the parent; on disconnect runs `close` and exits. */
export function reportPort(port: number, close: () => Promise<unknown>): void {
  process.send?.({ port });
  process.on('disconnect', () => {
    void close().finally(() => process.exit(0));
  });
}
