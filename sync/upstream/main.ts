/**
 * The upstream's composition root (docs/architecture.md "The two applications"): settings → the
 * core (pool, users, identity, metrics, map tiles; server.ts) → the list of parts (parts.ts, and
 * billing when PLUGINS=billing: sync/upstream/billing, BTCPay's webhooks reach the upstream),
 * mounted and run by the upstream server. A new part is one function and one line here.
 *
 * `meshhub upstream` as a process: settings (every problem at once, exit 1), the upstream
 * server, SIGTERM/SIGINT stop within a deadline (a second signal or the deadline exits at once),
 * and a non-zero exit when it cannot start, so the service manager restarts it.
 */
import { ConfigError } from '../../src/config/load.js';
import { onShutdownSignals, STOP_DEADLINE_MS } from '../../src/kernel/shutdown.js';
import { debugRequested, StartupFailure, startupFailureText } from '../../src/kernel/startup-failure.js';
import { createLogger, type Logger } from '../../src/log.js';
import type { UpstreamBilling } from './billing/index.js';
import { identityPart, messagingPart, openApiPart, siteDataPart, webPart } from './parts.js';
import {
  openUpstreamCore,
  type UpstreamCore,
  type UpstreamOptions,
  type UpstreamPart,
  type UpstreamServer,
  upstreamServer,
} from './server.js';
import { loadUpstreamSettings, type UpstreamSettings } from './settings.js';

export type { UpstreamOptions, UpstreamServer };

/** Billing, when enabled (PLUGINS=billing): loaded only then. */
async function billingPart(core: UpstreamCore): Promise<UpstreamBilling | undefined> {
  const { settings } = core;
  if (!settings.billing) return undefined;
  return (await import('./billing/index.js')).upstreamBilling({
    settings: settings.billing,
    pool: core.pool,
    identity: core.identity,
    log: core.log,
    registry: core.metrics.registry,
    version: core.version,
  });
}

/**
 * Builds the upstream (the pool connects lazily, the identity key is read or made); `start()`
 * migrates, starts the parts and listens.
 */
export async function createUpstream(
  settings: UpstreamSettings,
  options: UpstreamOptions,
): Promise<UpstreamServer> {
  const core = await openUpstreamCore(settings, options);
  const siteData = siteDataPart(core);
  const billing = await billingPart(core);
  const billingRoutes: UpstreamPart | undefined = billing && {
    routes: [['/api/v1/billing', billing.routes]],
    start: () => billing.start(),
    stop: () => billing.stop(),
  };
  const parts: UpstreamPart[] = [
    siteData.health,
    siteData.part,
    identityPart(core),
    messagingPart(core),
    ...(billingRoutes ? [billingRoutes] : []),
    openApiPart(core, { billing: billing !== undefined }),
    webPart(core),
  ];
  return upstreamServer(core, parts, siteData.upgrade, billing ? { billing } : {});
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
    // A taken port and the like: the caller prints one line; the log keeps the details.
    if (err instanceof StartupFailure) log.debug({ err }, 'the upstream could not start');
    else log.fatal({ err }, 'the upstream could not start');
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
    // A ConfigError, a taken port, DATA_DIR: one line naming it (the stack with LOG_LEVEL=debug).
    const text = startupFailureText(error, 'meshhub upstream', debugRequested(env));
    err(text ?? `meshhub upstream: could not start: ${(error as Error).message}\n`);
    return 1;
  }
}
