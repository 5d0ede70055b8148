#!/usr/bin/env -S node --max-semi-space-size=2 --min-semi-space-size=2
/**
 * The `meshhub` command. From a checkout: `npm run meshhub -- <command>`; `npm start` runs
 * `meshhub start`.
 */
import { join } from 'node:path';
import { loadPlugins, UnknownPluginError } from '../plugins/index.js';
import { dataDirFrom, runTokenCommand, runUserCommand, USER_HELP } from '../src/auth/cli-commands.js';
import { backupDirOf } from '../src/backup/settings.js';
import { parseDuration, splitList } from '../src/config/fields.js';
import { ConfigError } from '../src/config/load.js';
import {
  type CliCommand,
  parseCommand,
  pickSubcommand,
  reportCliError,
  stringOptions,
} from '../src/kernel/cli-args.js';
import { onShutdownSignals } from '../src/kernel/shutdown.js';
import {
  bindFailure,
  debugRequested,
  StartupFailure,
  startupFailureText,
} from '../src/kernel/startup-failure.js';
import { createLogger } from '../src/log.js';
import { runSubscriptionCommand, SUBSCRIPTION_HELP } from '../src/messaging/subscription-commands.js';
import { damagedDatabase, HUB_DATABASE_FILE } from '../src/store/database.js';
import { readVersion } from '../src/version.js';
import { loadConfig, loadHubSettings } from './settings.js';

const START = {
  name: 'meshhub start',
  help: `  meshhub start         Run the hub (what \`npm start\` and a bare \`meshhub\` run). Configured by
                        environment variables (see README): DATA_DIR, HTTP_HOST, HTTP_PORT,
                        RADIO, MQTT_PORT, PLUGINS, LOG_LEVEL, ...
`,
  options: {},
  positionals: false,
} satisfies CliCommand;

const SIM = {
  name: 'meshhub sim',
  help: `  meshhub sim [options] Run the mesh simulator alone: a virtual Meshtastic device on TCP that
                        the hub (RADIO=tcp:127.0.0.1:4403) or any Meshtastic app can connect to.
      --host HOST         listen address (SIM_HOST, default 127.0.0.1)
      --port PORT         listen port (SIM_PORT, default 4403)
      --nodes N           number of simulated nodes (SIM_NODES, default 6)
      --backfill DUR      history replayed to each new client, e.g. 30d (SIM_BACKFILL, default 24h)
      --interval SECONDS  seconds between telemetry packets per node (SIM_TELEMETRY_SECONDS, default 300)
      --seed N            seed for names, positions and values (SIM_SEED; default: from SYNC_SITE_ID, else 1)
`,
  options: stringOptions('host', 'port', 'nodes', 'backfill', 'interval', 'seed'),
  positionals: false,
} satisfies CliCommand;

const MCP = {
  name: 'meshhub mcp',
  help: `  meshhub mcp           The MCP server (mesh and audit tools) on stdio, over the database in
                        DATA_DIR (MCP_ROLES for privacy-gated events; stdout carries only the
                        protocol). Over HTTP instead: MCP_HTTP_ENABLED=true serves it at POST /mcp
                        on the running hub's port, behind its bearer tokens.
`,
  options: {},
  positionals: false,
} satisfies CliCommand;

const VERSION = {
  name: 'meshhub version',
  help: '  meshhub version       Print the version (also --version, -v).\n',
  options: {},
  positionals: false,
} satisfies CliCommand;

const HELP_COMMAND = {
  name: 'meshhub help',
  help: "  meshhub help [<command>]\n                        This help, or a command's (as meshhub <command> --help).\n",
  options: {},
} satisfies CliCommand;

const HELP = `meshhub — edge hub for Meshtastic LoRa mesh networks

Usage: meshhub <command> [options]; meshhub <command> --help for a command's own usage.

Commands:
${START.help}${SIM.help}  user, token           Manage users, print and revoke access tokens (see below).
  subscription          Grant and revoke which nodes a user may message (see below).
  plan                  Add, list and retire billing plans (PLUGINS=billing; see below).
                        These work while the hub runs, on the database in DATA_DIR; each says
                        on stderr which database it opened.
  backup, restore       Back up the hub's database (also while it runs) and restore a backup
                        (see below).
  sync                  This hub's upstream sync: \`meshhub sync status\`, \`meshhub sync key\`.
  tiles                 Copy an area's map tiles for offline use: \`meshhub tiles extract\` (see below).
  upstream              Run the upstream for many sites on PostgreSQL, and manage its sites,
                        users and subscriptions (\`meshhub upstream --help\`).
${MCP.help}${VERSION.help}${HELP_COMMAND.help}`;

const COMMANDS = [
  'start',
  'sim',
  'user',
  'token',
  'subscription',
  'plan',
  'backup',
  'restore',
  'sync',
  'upstream',
  'tiles',
  'mcp',
  'version',
  'help',
] as const;

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

/**
 * A start that cannot go on for a reason the operator fixes (a setting, a taken port, DATA_DIR,
 * the database): one line on stderr naming it and what to do, the stack only with
 * LOG_LEVEL=debug, exit 1. Anything else is a bug: thrown on, its stack printed.
 */
function failStart(error: unknown): never {
  const failure = error instanceof UnknownPluginError ? new ConfigError([error.message]) : error;
  const text = startupFailureText(failure, 'meshhub', debugRequested());
  if (text === undefined) throw error;
  process.stderr.write(text);
  process.exit(1);
}

/** The hub's settings and every enabled plugin's, all problems reported at once. */
async function loadHubSettingsOrExit() {
  const names = splitList(process.env.PLUGINS ?? '');
  const { SLICED_CORE_MODULES } = await import('./main.js');
  try {
    const plugins = await loadPlugins(names);
    return loadHubSettings(process.env, [...SLICED_CORE_MODULES, ...plugins]);
  } catch (error) {
    failStart(error);
  }
}

async function runHub(): Promise<void> {
  const { config, slices } = await loadHubSettingsOrExit();
  // The hub's code is loaded only to run it: every other command answers without it.
  const { createHub } = await import('./main.js');
  const { hubAnswers, SystemdNotifier } = await import('./sd-notify.js');
  const log = createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT });
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
    // Settings checked together when the hub is built (AUTH_JWKS_URL with AUTH_ISSUER, ...),
    // DATA_DIR, the database, another hub on DATA_DIR.
    failStart(error);
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
  } catch (error) {
    // A taken port, a damaged database met by a first query: stderr says it in one line
    // (failStart); the log keeps the details.
    const err = damagedDatabase(join(config.DATA_DIR, HUB_DATABASE_FILE), error);
    if (err instanceof StartupFailure) log.debug({ err: error }, 'meshhub could not start');
    else log.fatal({ err }, 'meshhub could not start');
    await stop().catch(() => {});
    failStart(err);
  }
  await systemd.ready();
}

async function runSimulator(args: string[]): Promise<void> {
  const { values } = parseCommand(args, SIM, (text) => process.stderr.write(text));
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
  const { MeshSimulator } = await import('../src/mesh/simulator/simulator.js');
  const { simulatorOptionsFrom } = await import('../src/mesh/simulator/simulator-actor.js');
  const sim = new MeshSimulator({ ...simulatorOptionsFrom(config, env.SYNC_SITE_ID?.trim()), log });
  const address = await sim.start().catch((error: unknown) => {
    // A taken port is one line, as for every port of the hub (README "Configuration").
    const failure = bindFailure(error, {
      portSetting: 'SIM_PORT (--port)',
      port: config.SIM_PORT,
      host: config.SIM_HOST,
      hostSetting: 'SIM_HOST (--host)',
    });
    const text = startupFailureText(failure, 'meshhub sim', debugRequested());
    if (text === undefined) throw error;
    process.stderr.write(text);
    process.exit(1);
  });
  log.info({ ...address, nodes: config.SIM_NODES }, 'simulator listening; connect with RADIO=tcp:HOST:PORT');
  onShutdownSignals(() => sim.stop(), log);
}

const io = {
  out: (text: string) => {
    process.stdout.write(text);
  },
  err: (text: string) => {
    process.stderr.write(text);
  },
};

/** The hub's DATA_DIR, read when a command first needs it (so `--help` needs no valid settings). */
function hubCommandContext() {
  return {
    get dataDir() {
      return loadConfigOrExit().DATA_DIR;
    },
    dataDirFrom: dataDirFrom(process.env),
    get backupDir() {
      const config = loadConfigOrExit();
      return backupDirOf(config.DATA_DIR, config.BACKUP_DIR);
    },
    env: process.env,
    stdin: process.stdin,
    ...io,
  };
}

async function fullHelp(): Promise<string> {
  const { PLAN_HELP } = await import('../src/billing/plan-commands.js');
  const { BACKUP_HELP } = await import('../src/backup/commands.js');
  const { SYNC_HELP } = await import('../sync/site/commands.js');
  const { UPSTREAM_HELP } = await import('../sync/upstream/commands.js');
  const { TILES_HELP } = await import('../src/ui-server/tiles-command.js');
  return [
    HELP,
    USER_HELP,
    SUBSCRIPTION_HELP,
    PLAN_HELP,
    BACKUP_HELP,
    SYNC_HELP,
    TILES_HELP,
    UPSTREAM_HELP,
  ].join('\n');
}

export async function main(argv: string[]): Promise<void> {
  // A bare `meshhub` runs the hub, as `npm start` does.
  const args = argv.length === 0 ? ['start'] : [...argv];
  try {
    if (args[0] === '--version' || args[0] === '-v') args[0] = 'version';
    if (args[0] === '--help' || args[0] === '-h') args[0] = 'help';
    if (args[0] === 'help') return await run('help', args.slice(1));
    const { sub: command, rest } = pickSubcommand(args, {
      name: 'meshhub',
      help: HELP,
      subcommands: COMMANDS,
      noun: 'command',
    });
    await run(command, rest);
  } catch (error) {
    const code = reportCliError(error, io);
    if (code === undefined) throw error;
    process.exitCode = code;
  }
}

async function run(command: (typeof COMMANDS)[number], rest: string[]): Promise<void> {
  switch (command) {
    case 'start':
      parseCommand(rest, START, io.err);
      return runHub();
    case 'sim':
      return runSimulator(rest);
    case 'user':
    case 'token':
    case 'subscription':
    case 'plan': {
      const commands = {
        user: runUserCommand,
        token: runTokenCommand,
        subscription: runSubscriptionCommand,
        // The billing plugin's code is loaded only when asked for (plugins/index.ts).
        plan: async (args: string[], c: ReturnType<typeof hubCommandContext>) =>
          (await import('../src/billing/plan-commands.js')).runPlanCommand(args, c),
      };
      process.exitCode = await commands[command](rest, hubCommandContext());
      return;
    }
    case 'backup':
    case 'restore': {
      const { runBackupCommand, runRestoreCommand } = await import('../src/backup/commands.js');
      const { backupDirOf } = await import('../src/backup/settings.js');
      const runCommand = command === 'backup' ? runBackupCommand : runRestoreCommand;
      process.exitCode = await runCommand(rest, {
        get dataDir() {
          return loadConfigOrExit().DATA_DIR;
        },
        get backupDir() {
          const config = loadConfigOrExit();
          return backupDirOf(config.DATA_DIR, config.BACKUP_DIR);
        },
        ...io,
      });
      return;
    }
    case 'upstream': {
      // Loaded only when asked for: the hub itself never needs PostgreSQL.
      const { runUpstreamCommand } = await import('../sync/upstream/commands.js');
      process.exitCode = await runUpstreamCommand(rest, { env: process.env, stdin: process.stdin, ...io });
      return;
    }
    case 'tiles': {
      const { runTilesCommand } = await import('../src/ui-server/tiles-command.js');
      process.exitCode = await runTilesCommand(rest, {
        ...io,
        dataDir: () => loadConfigOrExit().DATA_DIR,
        tty: process.stderr.isTTY === true,
      });
      return;
    }
    case 'mcp': {
      parseCommand(rest, MCP, io.err);
      // stdout is the MCP protocol: the security warning and every log line go to stderr.
      const { runMcpServer } = await import('./mcp.js');
      let running: Awaited<ReturnType<typeof runMcpServer>>;
      try {
        running = await runMcpServer(process.env);
      } catch (error) {
        if (error instanceof ConfigError) fail(`meshhub mcp: ${error.message}`, 1);
        throw error;
      }
      // When the client closes stdin nothing is left to say, whatever handles remain.
      return running.closed.then(() => process.exit(0));
    }
    case 'sync': {
      const { syncCommand } = await import('../sync/site/commands.js');
      process.exitCode = await syncCommand(rest, {
        env: process.env,
        dataDir: () => loadConfig(process.env).DATA_DIR,
        dataDirFrom: dataDirFrom(process.env),
        ...io,
      });
      return;
    }
    case 'version':
      parseCommand(rest, VERSION, io.err);
      io.out(`${readVersion()}\n`);
      return;
    case 'help': {
      const [topic, ...more] = rest;
      if (topic === undefined || topic.startsWith('-')) {
        parseCommand(rest, HELP_COMMAND, io.err);
        io.out(await fullHelp());
        return;
      }
      // `meshhub help user add` is `meshhub user add --help`.
      return main([topic, ...more, '--help']);
    }
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  // A damaged database met by any command is one line naming the file (the stack with
  // LOG_LEVEL=debug); anything else is a bug, printed with its stack.
  let dataDir = './data';
  try {
    dataDir = loadConfig(process.env).DATA_DIR;
  } catch {
    // The settings' own problems were reported where they were read.
  }
  const failure = damagedDatabase(join(dataDir, HUB_DATABASE_FILE), error);
  process.stderr.write(
    startupFailureText(failure, 'meshhub', debugRequested()) ??
      `meshhub: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
