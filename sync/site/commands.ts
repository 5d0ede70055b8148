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
import { join } from 'node:path';
import { LocalIssuer } from '../../src/auth/local-issuer.js';
import { ConfigError } from '../../src/config/load.js';
import { componentSchemaVersion } from '../../src/store/component-migrations.js';
import { openDatabase } from '../../src/store/database.js';
import { Outbox } from './outbox.js';
import { lagSeconds, SYNC_STATE } from './push-actor.js';

export const SYNC_HELP = `Usage:
  meshhub sync status   Print the upstream sync state: acknowledged sequence, outbox depth,
                        oldest entry's age, last success, last error, dropped total, downlink.
  meshhub sync key      Print this hub's public key set (JWKS) for registering the site upstream:
                        meshhub upstream site add <site_id> --public-key <file>
`;

/** The component the outbox's tables belong to (outbox-schema.ts). */
const SYNC_COMPONENT = 'sync';
const DATABASE_FILE = 'meshhub.sqlite';

export interface SyncCommandIo {
  env: NodeJS.ProcessEnv;
  /** The hub's DATA_DIR from its validated settings (hub/cli.ts); throws ConfigError when they are invalid. */
  dataDir: () => string;
  out: (line: string) => void;
}

export async function syncCommand(args: string[], io: SyncCommandIo): Promise<number> {
  const [sub, ...rest] = args;
  if ((sub !== 'status' && sub !== 'key') || rest.length > 0) {
    io.out(
      `meshhub sync: ${sub === undefined ? 'name a subcommand' : `unknown subcommand "${[sub, ...rest].join(' ')}"`}`,
    );
    io.out('');
    io.out(SYNC_HELP.trimEnd());
    return 2;
  }
  let dataDir: string;
  try {
    dataDir = io.dataDir();
  } catch (error) {
    if (error instanceof ConfigError) {
      io.out(`meshhub: ${error.message}`);
      return 1;
    }
    throw error;
  }
  if (sub === 'key') {
    const issuer = await LocalIssuer.open(dataDir);
    io.out(JSON.stringify(issuer.jwks(), null, 2));
    return 0;
  }
  return printStatus(dataDir, io);
}

function printStatus(dataDir: string, io: SyncCommandIo): number {
  const upstream = io.env.SYNC_UPSTREAM_URL?.trim();
  const line = (label: string, value: string) => io.out(`${`${label}:`.padEnd(15)} ${value}`);
  line('upstream', upstream ? upstream : 'not configured (SYNC_UPSTREAM_URL is unset)');
  if (io.env.SYNC_SITE_ID?.trim()) line('site', io.env.SYNC_SITE_ID.trim());
  const file = join(dataDir, DATABASE_FILE);
  if (!existsSync(file)) {
    io.out(`no hub database at ${file}`);
    return 1;
  }
  const db = openDatabase(file);
  try {
    if (componentSchemaVersion(db, SYNC_COMPONENT) === 0) {
      io.out('sync has never run on this hub: there is no outbox');
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
