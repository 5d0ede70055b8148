/** Settings of the scheduled backups (README "Backups and upgrades"). */
import { join } from 'node:path';
import { z } from 'zod';
import { int, text } from '../config/fields.js';
import { cronSetting } from '../kernel/scheduler.js';

export const backupSettings = z.object({
  /**
   * Cron expression (minute hour day month weekday) of the scheduled backup, or `off`. Default:
   * daily at 02:43, a quiet hour apart from the retention job's 03:17.
   */
  BACKUP_CRON: z.union([z.literal('off'), cronSetting]).default('43 2 * * *'),
  /** Where backups (scheduled, `meshhub backup`, pre-migration) go; unset: DATA_DIR/backups. */
  BACKUP_DIR: text.pipe(z.string().min(1)).optional(),
  /** How many scheduled backups (`meshhub-<time>.sqlite`) to keep; older ones are deleted. */
  BACKUP_KEEP: int(1, 1000).default(7),
});

export type BackupSettings = z.output<typeof backupSettings>;

/** BACKUP_DIR, or its default `backups` in DATA_DIR. */
export function backupDirOf(dataDir: string, backupDir: string | undefined): string {
  return backupDir ?? join(dataDir, 'backups');
}
