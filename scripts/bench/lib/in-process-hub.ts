/**
 * A whole hub in this process, silent and without default metrics, for the benchmarks that drive
 * it directly (and scripts/screenshot.ts). Not for a file whose own process is measured: it loads
 * the hub.
 */
import { pino } from 'pino';
import { createHub, type Hub } from '../../../hub/main.js';
import { loadConfig } from '../../../hub/settings.js';

/** Creates and starts the hub with `env` as its settings (and as the env its modules read). */
export async function startInProcessHub(env: Record<string, string>): Promise<Hub> {
  const hub = await createHub(loadConfig(env), {
    log: pino({ level: 'silent' }),
    defaultMetrics: false,
    env,
  });
  await hub.start();
  return hub;
}
