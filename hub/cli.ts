#!/usr/bin/env -S node --max-semi-space-size=2 --min-semi-space-size=2
/**
 * The `meshhub` command. From a checkout: `npm run meshhub -- <command>`; `npm start` runs
 * `meshhub start`.
 */
import { parseArgs } from 'node:util';
import { loadPlugins, UnknownPluginError } from '../plugins/index.js';
import { runTokenCommand, runUserCommand, USER_HELP } from '../src/auth/cli-commands.js';
import { parseDuration, splitList } from '../src/config/fields.js';
import { ConfigError } from '../src/config/load.js';
import { onShutdownSignals } from '../src/kernel/shutdown.js';
import { createLogger } from '../src/log.js';
import { MeshSimulator } from '../src/mesh/simulator/simulator.js';
import { simulatorOptionsFrom } from '../src/mesh/simulator/simulator-actor.js';
import { runSubscriptionCommand, SUBSCRIPTION_HELP } from '../src/messaging/subscription-commands.js';
import { readVersion } from '../src/version.js';
import { createHub, SLICED_CORE_MODULES } from './main.js';
import { hubAnswers, SystemdNotifier } from './sd-notify.js';
import { loadConfig, loadHubSettings } from './settings.js';

const HELP = `meshhub — edge hub for Meshtastic LoRa mesh networks

Usage: meshhub <command> [options]

Commands:
  start                 Run the hub (what \`npm start\` runs). Configured by environment
                        variables (see README): DATA_DIR, HTTP_HOST, HTTP_PORT, RADIO, ...
  sim [options]         Run the mesh simulator alone: a virtual Meshtastic device on TCP that
                        the hub (RADIO=tcp:127.0.0.1:4403) or any Meshtastic app can connect to.
      --host HOST         listen address (SIM_HOST, default 127.0.0.1)
      --port PORT         listen port (SIM_PORT, default 4403)
      --nodes N           number of simulated nodes (SIM_NODES, default 6)
      --backfill DUR      history replayed to each new client, e.g. 30d (SIM_BACKFILL, default 24h)
      --interval SECONDS  seconds between telemetry packets per node (SIM_TELEMETRY_SECONDS, default 300)
      --seed N            seed for names, positions and values (SIM_SEED; default: from SYNC_SITE_ID, else 1)
  user, token           Manage users, print and revoke access tokens (see below).
  subscription          Grant and revoke which nodes a user may message (see below).
  plan                  Add, list and retire billing plans (PLUGINS=billing; see below).
                        These work while the hub runs, on the database in DATA_DIR.
  sync                  This hub's upstream sync: \`meshhub sync status\`, \`meshhub sync key\`.
  upstream              Run the upstream for many sites on PostgreSQL, and manage its sites,
                        users and subscriptions (\`meshhub upstream help\`).
  mcp                   The MCP server (mesh and audit tools) on stdio, over the database in DATA_DIR
                        (MCP_ROLES for privacy-gated events; stdout carries only the protocol).
  --version             Print the version.
  --help                Print this help.
`;

function fail(message: string, code = 2): never {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env) {
  try {
    return loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) fail(`meshhub: ${error.message}`, 1);
    throw error;
  }
}

/** The hub's settings and every enabled plugin's, all problems reported at once. */
async function loadHubSettingsOrExit() {
  const names = splitList(process.env.PLUGINS ?? '');
  try {
    const plugins = await loadPlugins(names);
    return loadHubSettings(process.env, [...SLICED_CORE_MODULES, ...plugins]);
  } catch (error) {
    if (error instanceof UnknownPluginError) fail(`meshhub: invalid configuration:\n  - ${error.message}`, 1);
    if (error instanceof ConfigError) fail(`meshhub: ${error.message}`, 1);
    throw error;
  }
}

async function runHub(): Promise<void> {
  const { config, slices } = await loadHubSettingsOrExit();
  const log = createLogger({ level: config.LOG_LEVEL });
  let hub: Awaited<ReturnType<typeof createHub>>;
  try {
    hub = await createHub(config, {
      log,
      pluginSettings: slices,
      onFatal: (actor) => {
        log.fatal(
          { actor },
          'a required part of the hub keeps failing; exiting so the service manager restarts us',
        );
        void hub.stop().finally(() => process.exit(1));
      },
    });
  } catch (error) {
    if (error instanceof UnknownPluginError) fail(`meshhub: invalid configuration:\n  - ${error.message}`, 1);
    // Settings checked together when the hub is built (AUTH_JWKS_URL with AUTH_ISSUER, ...).
    if (error instanceof ConfigError) fail(`meshhub: ${error.message}`, 1);
    throw error;
  }
  // Under systemd (Type=notify): READY=1 once started, the watchdog fed while the hub answers.
  const systemd = new SystemdNotifier({
    healthy: () => hubAnswers(hub),
    onProblem: (problem, err) => log.warn({ err }, problem),
  });
  const stop = async () => {
    // Not awaited: the stop must not wait for systemd to read the message.
    void systemd.stopping();
    await hub.stop();
  };
  onShutdownSignals(stop, log);
  process.on('uncaughtException', (err) => {
    log.fatal({ err }, 'uncaught exception');
    void stop().finally(() => process.exit(1));
  });
  try {
    await hub.start();
  } catch (err) {
    log.fatal({ err }, 'meshhub could not start');
    await stop().catch(() => {});
    process.exit(1);
  }
  await systemd.ready();
}

async function runSimulator(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      nodes: { type: 'string' },
      backfill: { type: 'string' },
      interval: { type: 'string' },
      seed: { type: 'string' },
    },
    strict: true,
  });
  if (values.backfill !== undefined && parseDuration(values.backfill) === undefined) {
    fail('meshhub sim: --backfill expects a duration like 90s, 15m, 24h or 30d');
  }
  const env = { ...process.env };
  const map: Record<string, string | undefined> = {
    SIM_HOST: values.host,
    SIM_PORT: values.port,
    SIM_NODES: values.nodes,
    SIM_BACKFILL: values.backfill,
    SIM_TELEMETRY_SECONDS: values.interval,
    SIM_SEED: values.seed,
  };
  for (const [k, v] of Object.entries(map)) if (v !== undefined) env[k] = v;
  const config = loadConfigOrExit(env);
  const log = createLogger({ level: config.LOG_LEVEL, name: 'meshhub-sim' });
  const sim = new MeshSimulator({ ...simulatorOptionsFrom(config, env.SYNC_SITE_ID?.trim()), log });
  const address = await sim.start().catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EADDRINUSE') throw error;
    return fail(
      `meshhub sim: port ${config.SIM_PORT} on ${config.SIM_HOST} is taken (another simulator or hub?): choose another with --port or SIM_PORT, or 0 for a free one`,
      1,
    );
  });
  log.info({ ...address, nodes: config.SIM_NODES }, 'simulator listening; connect with RADIO=tcp:HOST:PORT');
  onShutdownSignals(() => sim.stop(), log);
}

export async function main(argv: string[]): Promise<void> {
  const [command = 'start', ...rest] = argv;
  switch (command) {
    case 'start':
      return runHub();
    case 'sim':
      return runSimulator(rest);
    case 'user':
    case 'token':
    case 'subscription':
    case 'plan': {
      const config = loadConfigOrExit();
      const ctx = {
        dataDir: config.DATA_DIR,
        stdin: process.stdin,
        out: (text: string) => process.stdout.write(text),
        err: (text: string) => process.stderr.write(text),
      };
      const commands = {
        user: runUserCommand,
        token: runTokenCommand,
        subscription: runSubscriptionCommand,
        // The billing plugin's code is loaded only when asked for (plugins/index.ts).
        plan: async (args: string[], c: typeof ctx) =>
          (await import('../src/billing/plan-commands.js')).runPlanCommand(args, c),
      };
      process.exitCode = await commands[command](rest, ctx);
      return;
    }
    case 'upstream': {
      // Loaded only when asked for: the hub itself never needs PostgreSQL.
      const upstreamCtx = {
        env: process.env,
        stdin: process.stdin,
        out: (text: string) => process.stdout.write(text),
        err: (text: string) => process.stderr.write(text),
      };
      if (rest[0] === 'plan') {
        const { runUpstreamPlanCommand } = await import('../sync/upstream/billing/plan-commands.js');
        process.exitCode = await runUpstreamPlanCommand(rest.slice(1), upstreamCtx);
        return;
      }
      const { runUpstreamCommand } = await import('../sync/upstream/commands.js');
      process.exitCode = await runUpstreamCommand(rest, upstreamCtx);
      return;
    }
    case 'mcp': {
      // stdout is the MCP protocol: the security warning and every log line go to stderr.
      const { runMcpServer } = await import('./mcp.js');
      let run: Awaited<ReturnType<typeof runMcpServer>>;
      try {
        run = await runMcpServer(process.env);
      } catch (error) {
        if (error instanceof ConfigError) fail(`meshhub mcp: ${error.message}`, 1);
        throw error;
      }
      // When the client closes stdin nothing is left to say, whatever handles remain.
      return run.closed.then(() => process.exit(0));
    }
    case 'sync': {
      const { syncCommand } = await import('../sync/site/commands.js');
      const code: unknown = await syncCommand(rest, {
        env: process.env,
        dataDir: () => loadConfig(process.env).DATA_DIR,
        out: (text: string) => process.stdout.write(text),
      });
      if (typeof code === 'number') process.exitCode = code;
      return;
    }
    case '--version':
    case '-v':
    case 'version':
      process.stdout.write(`${readVersion()}\n`);
      return;
    case '--help':
    case '-h':
    case 'help':
      process.stdout.write(
        `${HELP}\n${USER_HELP}\n${SUBSCRIPTION_HELP}\n${(await import('../src/billing/plan-commands.js')).PLAN_HELP}\n${(await import('../sync/upstream/commands.js')).UPSTREAM_HELP}\n${(await import('../sync/upstream/billing/plan-commands.js')).UPSTREAM_PLAN_HELP}`,
      );
      return;
    default:
      fail(`meshhub: unknown command "${command}"\n\n${HELP}`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(
    `meshhub: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
