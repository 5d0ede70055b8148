/**
 * `meshhub upstream` as a process: settings (every problem at once, exit 1), the upstream
 * server, SIGTERM/SIGINT stop within a deadline (a second signal or the deadline exits at once),
 * and a non-zero exit when it cannot start, so the service manager restarts it.
 */
import { ConfigError } from '../../src/config/load.js';
import { createLogger, type Logger } from '../../src/log.js';
import { createUpstream, type UpstreamServer } from './server.js';
import { loadUpstreamSettings, type UpstreamSettings } from './settings.js';

const STOP_DEADLINE_MS = 5_000;

function onShutdownSignals(stop: () => Promise<void>, log: Logger): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    log.warn({ signal }, 'stopping');
    setTimeout(() => process.exit(1), STOP_DEADLINE_MS).unref();
    stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}

/** Starts the upstream and keeps it running until a signal; resolves once it listens. */
export async function serveUpstream(
  settings: UpstreamSettings,
  log: Logger = createLogger({ level: settings.LOG_LEVEL, name: 'meshhub-upstream' }),
): Promise<UpstreamServer> {
  const upstream = await createUpstream(settings, { log });
  onShutdownSignals(() => upstream.stop(), log);
  process.on('uncaughtException', (err) => {
    log.fatal({ err }, 'uncaught exception');
    setTimeout(() => process.exit(1), STOP_DEADLINE_MS).unref();
    void upstream.stop().finally(() => process.exit(1));
  });
  try {
    await upstream.start();
  } catch (err) {
    log.fatal({ err }, 'the upstream could not start');
    await upstream.stop().catch(() => {});
    throw err;
  }
  return upstream;
}

/**
 * `meshhub upstream` (serve): 0 once listening (the process then runs until a signal), 1 when
 * the settings are invalid or it cannot start.
 */
export async function runUpstreamServer(
  env: Readonly<Record<string, string | undefined>>,
  err: (text: string) => void,
): Promise<number> {
  let settings: UpstreamSettings;
  try {
    settings = loadUpstreamSettings(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      err(`meshhub upstream: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
  try {
    await serveUpstream(settings);
    return 0;
  } catch (error) {
    if (error instanceof ConfigError) {
      err(`meshhub upstream: ${error.message}\n`);
      return 1;
    }
    err(`meshhub upstream: could not start: ${(error as Error).message}\n`);
    return 1;
  }
}
