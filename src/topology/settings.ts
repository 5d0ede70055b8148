/** Settings of traceroutes and neighbour links (README "Traceroute and neighbours"). */
import { z } from 'zod';
import { duration, int } from '../config/fields.js';

export const topologySettings = z.object({
  /** How long a traceroute the hub sent waits for its answer before it is `no_answer` (5s–10m). */
  TRACEROUTE_TIMEOUT: duration
    .prefault('60s')
    .refine((ms) => ms >= 5_000 && ms <= 600_000, { message: 'must be from 5s to 10m, e.g. 60s' }),
  /** Days of traceroutes (sent and heard) and neighbour links kept; older ones are deleted hourly. */
  TOPOLOGY_RETENTION_DAYS: int(1, 3650).default(30),
});

export type TopologySettings = z.output<typeof topologySettings>;
