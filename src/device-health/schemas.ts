/**
 * `/api/v1/nodes/{node_id}/device-health`, `/api/v1/device-health/latest` and
 * `/api/v1/radio/airtime` in zod: the queries the routes validate with and the bodies they
 * answer. Plain zod: the web UI takes its types from here.
 */
import { z } from 'zod';
import { historyQuerySchema } from '../weather/schemas.js';

/** The weather history's query (range, interval, limit, cursor) with the node in the path. */
export const healthHistoryQuerySchema = historyQuerySchema.omit({ node_id: true });

export const healthPathSchema = z.object({
  node_id: z.string().min(1).max(128).meta({ description: 'A node id, `!` and 8 hex digits.' }),
});

export const healthLatestQuerySchema = z.object({
  node_id: z
    .string()
    .min(1, 'must not be empty')
    .max(128)
    .optional()
    .meta({ description: 'Only this node.' }),
});

const utc = z.iso.datetime().meta({ description: 'ISO 8601 UTC with Z.' });

/**
 * One sample (raw) or a bucket's means (1h / 1d); a field not sent (or, in a bucket, never sent
 * in it) is left out.
 */
export const healthSampleSchema = z.object({
  node_id: z.string(),
  timestamp: utc,
  battery_level: z.number().optional().meta({ description: 'Percent; 101 means on external power.' }),
  voltage: z.number().optional().meta({ description: 'Volts.' }),
  channel_utilization: z
    .number()
    .optional()
    .meta({ description: 'Percent of airtime the node heard in use.' }),
  air_util_tx: z
    .number()
    .optional()
    .meta({ description: 'Percent of airtime the node transmitted, last hour.' }),
  uptime_seconds: z.number().optional(),
  snr: z
    .number()
    .optional()
    .meta({ description: 'dB, of a packet the hub’s radio heard straight from the node.' }),
  rssi: z.number().optional().meta({ description: 'dBm, as `snr`.' }),
  noise_floor: z.number().optional().meta({ description: 'dBm (LocalStats, where the firmware sends it).' }),
  packets_tx: z.number().optional().meta({ description: 'LocalStats: packets sent since boot.' }),
  packets_rx: z.number().optional().meta({ description: 'LocalStats: packets received since boot.' }),
  packets_rx_bad: z.number().optional().meta({ description: 'LocalStats: packets received malformed.' }),
});

export const healthListSchema = z.object({ data: z.array(healthSampleSchema) });

export type HealthSampleJson = z.output<typeof healthSampleSchema>;

/** The hub's own channel use against the airtime budget its send queue paces to. */
export const airtimeSchema = z.object({
  data: z.object({
    budget_percent: z.number().optional().meta({
      description:
        'MESSAGE_AIRTIME_PERCENT: the share the send queue paces to; absent while messaging does not run.',
    }),
    window_seconds: z
      .number()
      .meta({ description: 'The window `used_percent` is measured over (the last hour).' }),
    used_percent: z
      .number()
      .meta({ description: 'Time on air of the hub’s sent texts in the window, as a percent of it.' }),
    sent_packets: z.number().meta({ description: 'Texts the hub sent in the window (each attempt).' }),
    radio: z
      .object({
        node_id: z.string(),
        timestamp: utc,
        channel_utilization: z.number().optional(),
        air_util_tx: z.number().optional(),
        noise_floor: z.number().optional(),
      })
      .optional()
      .meta({
        description: 'The hub’s radio’s own report (device metrics / LocalStats); absent until it sends one.',
      }),
  }),
});

export type AirtimeJson = z.output<typeof airtimeSchema>;
