/**
 * Scheduled backups (README "Backups and upgrades"): on BACKUP_CRON the hub's database is copied
 * online into BACKUP_DIR (backup.ts) and all but the newest BACKUP_KEEP scheduled copies are
 * deleted. The last success (time, size, age) and the last error are shown in `/health` (the
 * `backup` actor's entry) and in `/metrics`.
 */
import { basename } from 'node:path';
import { Actor } from '../kernel/actor.js';
import type { Logger } from '../log.js';
import { defineModule, type ModuleMetrics } from '../module.js';
import type { Database } from '../store/database.js';
import { type BackupResult, backupDatabase, defaultBackupFile, pruneBackups } from './backup.js';
import { backupDirOf, backupSettings } from './settings.js';

export interface BackupGauges {
  succeeded(result: BackupResult, at: number): void;
  failed(): void;
}

/** Runs the scheduled backup and remembers how the last ones went, for `/health`. */
export class BackupActor extends Actor {
  readonly name = 'backup';
  override readonly required = false;
  private lastSuccess?: { at: number; file: string; bytes: number };
  private lastError?: { at: number; message: string };

  constructor(
    private readonly deps: {
      db: Database;
      dir: string;
      keep: number;
      cron: string;
      log: Logger;
      gauges: BackupGauges;
      now?: () => number;
    },
  ) {
    super();
  }

  async start(): Promise<void> {}
  async stop(): Promise<void> {}

  /** A failed last backup makes `/health` degraded until one succeeds. */
  override ready(): boolean {
    return this.lastError === undefined;
  }

  /** One scheduled backup: copy, check, prune. Throws (after recording it) when it failed. */
  async run(): Promise<BackupResult> {
    const { db, dir, keep, log, gauges } = this.deps;
    const now = this.deps.now ?? Date.now;
    try {
      const result = await backupDatabase(db, defaultBackupFile(dir, new Date(now())));
      const at = now();
      this.lastSuccess = { at, file: result.file, bytes: result.bytes };
      this.lastError = undefined;
      gauges.succeeded(result, at);
      const deleted = pruneBackups(dir, keep);
      log.info({ file: result.file, bytes: result.bytes, deleted }, 'backup done');
      return result;
    } catch (error) {
      // /health is open to the LAN: it names the error's code, never a path; the scheduler logs the rest.
      const code = (error as NodeJS.ErrnoException | undefined)?.code;
      const message = `${code ? `${code}: ` : ''}the backup failed; the hub's log has the details`;
      this.lastError = { at: now(), message };
      gauges.failed();
      throw error;
    }
  }

  override describe(): Record<string, unknown> {
    const now = (this.deps.now ?? Date.now)();
    const { lastSuccess, lastError } = this;
    return {
      backup: {
        cron: this.deps.cron,
        keep: this.deps.keep,
        ...(lastSuccess
          ? {
              last_success_at: new Date(lastSuccess.at).toISOString(),
              last_file: basename(lastSuccess.file),
              last_size_bytes: lastSuccess.bytes,
              age_s: Math.round((now - lastSuccess.at) / 1000),
            }
          : {}),
        ...(lastError
          ? { last_error: lastError.message, last_error_at: new Date(lastError.at).toISOString() }
          : {}),
      },
    };
  }
}

/** `/metrics`: the last success's time and size, and the failures. */
function backupGaugesOf(metrics: ModuleMetrics): BackupGauges {
  const [successAt, size] = [
    [
      'backup_last_success_timestamp_seconds',
      'When the last scheduled backup succeeded (Unix time, seconds); 0 until one has',
    ],
    ['backup_last_size_bytes', 'Size of the last successful scheduled backup, bytes'],
  ].map(([name, help]) => metrics.gauge({ name: name!, help: help! }));
  const failures = metrics.counter({
    name: 'backup_failures_total',
    help: 'Scheduled backups that failed (see /health for the last error)',
  });
  return {
    succeeded: (result, at) => {
      successAt!.set(Math.round(at / 1000));
      size!.set(result.bytes);
    },
    failed: () => failures.inc(),
  };
}

export const backupModule = defineModule({
  name: 'backup',
  settings: backupSettings,
  create(ctx) {
    const { BACKUP_CRON: cron, BACKUP_KEEP: keep } = ctx.settings;
    const actor = new BackupActor({
      db: ctx.db,
      dir: backupDirOf(ctx.hub.dataDir, ctx.settings.BACKUP_DIR),
      keep,
      cron,
      log: ctx.log,
      gauges: backupGaugesOf(ctx.metrics),
    });
    if (cron !== 'off') ctx.schedule('database', cron, () => actor.run());
    return { actors: [actor] };
  },
});
