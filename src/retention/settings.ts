/** Settings of the readings retention job. */
import { z } from 'zod';
import { int } from '../config/fields.js';
import { cronSetting } from '../kernel/scheduler.js';

export const retentionSettings = z.object({
  READINGS_RETENTION_DAYS: int(1, 36_500).default(90),
  /** Cron expression (minute hour day month weekday) of the retention job; checked at start-up. */
  RETENTION_CRON: cronSetting.default('17 3 * * *'),
});
