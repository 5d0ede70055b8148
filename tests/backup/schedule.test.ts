/**
 * Scheduled backups (README "Backups and upgrades"): BACKUP_CRON runs a backup on the hub's
 * scheduler into BACKUP_DIR, keeps the newest BACKUP_KEEP scheduled copies (never a
 * pre-migration copy or a file named by hand), and shows the last success and the last error in
 * `/health` and `/metrics`, over loopback as a monitor reads them.
 */
import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Hub } from '../../hub/main.js';
import { loadConfig } from '../../hub/settings.js';
import { configProblems } from '../helpers/config.js';
import { getJson, waitFor } from '../helpers/hub.js';
import { backupTestKit, integrity, ROWS_NOW, rowCounts } from './fixture.js';

const { fixtureDir, startHub } = backupTestKit();

async function hubOnFixture(
  extra: Record<string, string> = {},
): Promise<{ hub: Hub; base: string; dataDir: string }> {
  const { dataDir } = fixtureDir();
  return { ...(await startHub(dataDir, extra)), dataDir };
}

// biome-ignore lint/suspicious/noExplicitAny: /health's actor entries carry each actor's own details
async function backupHealth(base: string): Promise<{ status: string; actor: any }> {
  const { body: health } = await getJson(`${base}/health`);
  return { status: health.status, actor: health.actors.find((a: { name: string }) => a.name === 'backup') };
}

async function metric(base: string, name: string): Promise<number | undefined> {
  const text = await fetch(`${base}/metrics`).then((r) => r.text());
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

describe('scheduled backups', () => {
  it('back up into BACKUP_DIR, keep the newest BACKUP_KEEP, and show it in /health and /metrics', async () => {
    const { hub, base, dataDir } = await hubOnFixture({ BACKUP_KEEP: '2' });
    const dir = join(dataDir, 'backups');
    expect(existsSync(dir)).toBe(false);
    const before = await backupHealth(base);
    expect(before.actor.backup).toEqual({ cron: '43 2 * * *', keep: 2 });
    expect(await metric(base, 'meshhub_backup_last_success_timestamp_seconds')).toBe(0);

    await hub.scheduler.runNow('backup.database');
    const [first] = readdirSync(dir);
    expect(first).toMatch(/^meshhub-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}Z\.sqlite$/);
    const file = join(dir, first!);
    expect(integrity(file)).toBe('ok');
    expect(rowCounts(file)).toEqual(ROWS_NOW);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);

    const { status, actor } = await backupHealth(base);
    expect(status).toBe('ok');
    expect(actor.ready).toBe(true);
    // /health is open to the LAN: the file's name, never its path.
    expect(actor.backup).toMatchObject({ last_file: first, last_size_bytes: statSync(file).size });
    expect(JSON.stringify(actor)).not.toContain(dataDir);
    expect(Date.parse(actor.backup.last_success_at)).toBeGreaterThan(0);
    expect(actor.backup.age_s).toBeGreaterThanOrEqual(0);
    expect(actor.backup).not.toHaveProperty('last_error');
    expect(await metric(base, 'meshhub_backup_last_size_bytes')).toBe(statSync(file).size);
    expect(await metric(base, 'meshhub_backup_last_success_timestamp_seconds')).toBe(
      Math.round(Date.parse(actor.backup.last_success_at) / 1000),
    );
    expect(await metric(base, 'meshhub_backup_failures_total')).toBe(0);

    // Older scheduled copies beyond BACKUP_KEEP go; a pre-migration copy and a file named by hand stay.
    rmSync(file);
    const kept = ['pre-migration-v4-v5-2020-01-01T00-00-00Z.sqlite', 'mine.sqlite'];
    for (const name of [
      'meshhub-2020-01-01T00-00-00Z.sqlite',
      'meshhub-2020-01-02T00-00-00Z.sqlite',
      ...kept,
    ])
      writeFileSync(join(dir, name), 'old');
    await hub.scheduler.runNow('backup.database');
    const scheduled = readdirSync(dir)
      .filter((name) => name.startsWith('meshhub-'))
      .sort();
    expect(scheduled).toHaveLength(2);
    expect(scheduled[0]).toBe('meshhub-2020-01-02T00-00-00Z.sqlite');
    expect(scheduled[1]).toMatch(/^meshhub-2\d{3}-/);
    expect(scheduled[1]! > 'meshhub-2020-01-02').toBe(true);
    for (const name of kept) expect(existsSync(join(dir, name))).toBe(true);
  });

  it('report a failed backup in /health (degraded, the error) and count it in /metrics', async () => {
    const { dataDir: other } = fixtureDir();
    const notAFolder = join(other, 'meshhub.sqlite');
    const { hub, base } = await hubOnFixture({ BACKUP_DIR: notAFolder });
    await expect(hub.scheduler.runNow('backup.database')).resolves.toBeUndefined(); // the scheduler logs it
    const { status, actor } = await backupHealth(base);
    expect(status).toBe('degraded');
    expect(actor.ready).toBe(false);
    expect(actor.backup.last_error).toMatch(/ENOTDIR|EEXIST/);
    expect(actor.backup.last_error).not.toContain(other);
    expect(actor.backup).not.toHaveProperty('last_success_at');
    expect(await metric(base, 'meshhub_backup_failures_total')).toBe(1);
  });

  it('run on a short BACKUP_CRON by themselves', async () => {
    const { dataDir } = await hubOnFixture({ BACKUP_CRON: '* * * * * *' });
    const dir = join(dataDir, 'backups');
    const file = await waitFor(
      () => (existsSync(dir) ? readdirSync(dir).find((name) => name.endsWith('Z.sqlite')) : undefined),
      15_000,
      'a scheduled backup',
    );
    expect(integrity(join(dir, file))).toBe('ok');
  });

  it('are off with BACKUP_CRON=off, and a bad BACKUP_CRON is refused by name', async () => {
    const { hub } = await hubOnFixture({ BACKUP_CRON: 'off' });
    await expect(hub.scheduler.runNow('backup.database')).rejects.toThrow('no job "backup.database"');
    expect(configProblems(() => loadConfig({ BACKUP_CRON: 'daily' }))[0]).toMatch(/^BACKUP_CRON: /);
    expect(configProblems(() => loadConfig({ BACKUP_KEEP: '0' }))[0]).toMatch(/^BACKUP_KEEP: /);
  });
});
