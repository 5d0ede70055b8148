/**
 * `meshhub sync status` and `meshhub sync key`, run against DATA_DIR (also while the hub runs).
 *
 * - `status`: the outbox as the hub left it: acknowledged cursor, depth, age of the oldest
 *   entry, last success and last error, dropped total, and the downlink's state as the running
 *   hub last recorded it.
 * - `key`: the hub's public JWK set (its own signing key, created on first use), to register the
 *   site upstream: `meshhub sync key > site.jwks.json`, then on the upstream
 *   `meshhub upstream site add <site_id> --public-key site.jwks.json`.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { type CommandContext, openHubDatabase, reportError } from '../../src/auth/cli-commands.js';
import { LocalIssuer, SIGNING_KEY_FILE } from '../../src/auth/local-issuer.js';
import { ConfigError } from '../../src/config/load.js';
import { type CliCommand, parseCommand, pickSubcommand } from '../../src/kernel/cli-args.js';
import { componentSchemaVersion } from '../../src/store/component-migrations.js';
import { Outbox } from './outbox.js';
import { lagSeconds, SYNC_STATE } from './push-actor.js';

const STATUS = {
  name: 'meshhub sync status',
  help: `  meshhub sync status   Print the upstream sync state, one field a line: acknowledged sequence,
                        outbox depth, oldest entry's age, last success, last error, dropped
                        total, downlink. Reads SYNC_UPSTREAM_URL and DATA_DIR as the hub has them.
`,
  options: {},
  positionals: false,
} satisfies CliCommand;

const KEY = {
  name: 'meshhub sync key',
  help: `  meshhub sync key      Print this hub's public key set (JWKS) for registering the site upstream:
                        meshhub sync key > site.jwks.json, then on the upstream
                        meshhub upstream site add <site_id> --public-key site.jwks.json
`,
  options: {},
  positionals: false,
} satisfies CliCommand;

const GROUP = {
  name: 'meshhub sync',
  help: STATUS.help + KEY.help,
  subcommands: ['status', 'key'] as const,
};

export const SYNC_HELP = `Usage:\n${GROUP.help}`;

/** The component the outbox's tables belong to (outbox-schema.ts). */
const SYNC_COMPONENT = 'sync';

export interface SyncCommandIo extends Omit<CommandContext, 'dataDir' | 'stdin'> {
  env: Readonly<Record<string, string | undefined>>;
  /** The hub's DATA_DIR from its validated settings (hub/cli.ts); throws ConfigError when they are invalid. */
  dataDir: () => string;
}

export async function syncCommand(args: string[], io: SyncCommandIo): Promise<number> {
  const ctx: CommandContext = { ...io, dataDir: '', stdin: process.stdin };
  try {
    const { sub, rest } = pickSubcommand(args, GROUP);
    parseCommand(rest, sub === 'key' ? KEY : STATUS, io.err);
    try {
      ctx.dataDir = io.dataDir();
    } catch (error) {
      if (error instanceof ConfigError) {
        io.err(`meshhub: ${error.message}\n`);
        return 1;
      }
      throw error;
    }
    return sub === 'key' ? await printKey(ctx) : printStatus(ctx, io.env);
  } catch (error) {
    return reportError(error, ctx);
  }
}

/** The public JWK set on stdout (nothing else there); which key file on stderr. */
async function printKey(ctx: CommandContext): Promise<number> {
  const file = resolve(ctx.dataDir, SIGNING_KEY_FILE);
  const existed = existsSync(file);
  const issuer = await LocalIssuer.open(ctx.dataDir, { warn: (m) => ctx.err(`meshhub: ${m}\n`) });
  ctx.err(
    existed
      ? `meshhub: using signing key ${file} (${ctx.dataDirFrom ?? 'DATA_DIR'})\n`
      : `meshhub: created a new signing key ${file} (${ctx.dataDirFrom ?? 'DATA_DIR'}); if the hub runs with another DATA_DIR, set it and run this again\n`,
  );
  ctx.out(`${JSON.stringify(issuer.jwks(), null, 2)}\n`);
  return 0;
}

function printStatus(ctx: CommandContext, env: Readonly<Record<string, string | undefined>>): number {
  const upstream = env.SYNC_UPSTREAM_URL?.trim();
  if (!upstream) {
    ctx.out(
      'sync: not configured (SYNC_UPSTREAM_URL is unset here); set SYNC_UPSTREAM_URL and SYNC_SITE_ID as the hub has them\n',
    );
    return 1;
  }
  const line = (label: string, value: string) => ctx.out(`${`${label}:`.padEnd(15)} ${value}\n`);
  const db = openHubDatabase(ctx);
  try {
    line('upstream', upstream);
    line('site', env.SYNC_SITE_ID?.trim() || 'not set (SYNC_SITE_ID)');
    if (componentSchemaVersion(db, SYNC_COMPONENT) === 0) {
      line('outbox', 'none yet: sync has never run on this hub');
      return 0;
    }
    const outbox = new Outbox(db);
    const stats = outbox.stats();
    const now = Date.now();
    const at = (key: string) => {
      const ms = Number(outbox.getState(key));
      return outbox.getState(key) !== undefined && Number.isFinite(ms) ? ms : undefined;
    };
    const when = (ms: number | undefined) =>
      ms === undefined ? 'never' : `${new Date(ms).toISOString()} (${ago(now - ms)} ago)`;
    line('acked seq', String(stats.ackedSeq));
    line('last seq', String(stats.lastSeq));
    line('outbox depth', `${stats.depth} entries, about ${mebibytes(stats.approxBytes)}`);
    line(
      'oldest entry',
      stats.oldestAt === null ? 'none waiting' : `${ago(lagSeconds(stats.oldestAt, now) * 1000)} old`,
    );
    line('last success', when(at(SYNC_STATE.lastSuccessAt)));
    const error = outbox.getState(SYNC_STATE.lastError);
    line('last error', error === undefined ? 'none' : `${when(at(SYNC_STATE.lastErrorAt))}: ${error}`);
    line('dropped total', String(stats.droppedTotal));
    const downlink = outbox.getState(SYNC_STATE.downlinkState);
    line(
      'downlink',
      downlink === undefined
        ? 'never connected'
        : `${downlink} since ${when(at(SYNC_STATE.downlinkStateAt))} (as the hub last recorded it)`,
    );
    return 0;
  } finally {
    // Plain close, no checkpoint: a running hub owns the WAL.
    db.close();
  }
}

function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172_800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86_400)}d`;
}

function mebibytes(bytes: number): string {
  return bytes < 1024 * 1024 ? `${Math.ceil(bytes / 1024)} KiB` : `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
