/**
 * How both applications' processes stop on a signal (the hub's hub/cli.ts and the upstream's
 * sync/upstream/main.ts; docs/architecture.md "The two applications").
 */

/** How long a stop may take before the process exits anyway. */
export const STOP_DEADLINE_MS = 5_000;

/** Stops on SIGTERM/SIGINT within a deadline; a second signal or the deadline exits at once. */
export function onShutdownSignals(
  stop: () => Promise<void>,
  log: { warn(o: object, m: string): void },
  deadlineMs = STOP_DEADLINE_MS,
): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    log.warn({ signal }, 'stopping');
    setTimeout(() => process.exit(1), deadlineMs).unref();
    stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}
