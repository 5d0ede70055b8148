/** Deletes raw readings (and raw device health samples) older than READINGS_RETENTION_DAYS on RETENTION_CRON; rollups are kept. */
import { deleteHealthOlderThan } from '../device-health/module.js';
import { defineModule } from '../module.js';
import { deleteReadingsOlderThan } from '../store/retention.js';
import { retentionSettings } from './settings.js';

const DAY_MS = 86_400_000;

export const retentionModule = defineModule({
  name: 'retention',
  settings: retentionSettings,
  create(ctx) {
    const { READINGS_RETENTION_DAYS: days, RETENTION_CRON: cron } = ctx.settings;
    ctx.schedule('readings', cron, async () => {
      const cutoff = Date.now() - days * DAY_MS;
      const deleted = await deleteReadingsOlderThan(ctx.db, cutoff);
      // Device health's raw samples keep the readings' retention (its rollups are kept too).
      const deviceHealth = await deleteHealthOlderThan(ctx.db, cutoff);
      ctx.log.info({ deleted, deviceHealth, cutoff: new Date(cutoff).toISOString() }, 'retention pass done');
    });
    return {};
  },
});
