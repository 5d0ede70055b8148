/** Settings of the device health module (README "Device health"). */
import { z } from 'zod';
import { duration, flag, int } from '../config/fields.js';

export const deviceHealthSettings = z.object({
  /** Store device metrics and link quality (false: nothing is decoded or written; what is stored stays readable). */
  DEVICE_HEALTH: flag.prefault('true'),
  /** How often waiting device health samples are committed (one transaction each time). */
  DEVICE_HEALTH_FLUSH: duration
    .refine((ms) => ms >= 1_000 && ms <= 60_000, 'must be from 1s to 60s')
    .prefault('2s'),
  /** At most one SNR/RSSI sample per node in this many seconds (0: every packet heard directly). */
  DEVICE_HEALTH_SNR_SECONDS: int(0, 86_400).default(60),
});
