/**
 * The one config schema. Values come from environment variables (names as below) and, when
 * `CONFIG_FILE` names a JSON file, from that file (the environment wins). Every invalid value is
 * reported at once, by name; the hub then exits non-zero instead of limping on.
 */
import { z } from 'zod';

export type RadioSpec =
  | { kind: 'auto' }
  | { kind: 'sim' }
  | { kind: 'none' }
  | { kind: 'serial'; path: string; baudRate: number }
  | { kind: 'tcp'; host: string; port: number };

/** `auto` | `sim` | `none` | `serial:/dev/ttyUSB0[@115200]` | `tcp:host[:4403]` */
export function parseRadioSpec(value: string): RadioSpec | string {
  if (value === 'auto' || value === 'sim' || value === 'none') return { kind: value };
  if (value.startsWith('serial:')) {
    const m = /^serial:(\/[^@\s]+)(?:@(\d{3,7}))?$/.exec(value);
    if (!m) return 'expected serial:/dev/ttyUSB0 or serial:/dev/ttyUSB0@115200';
    return { kind: 'serial', path: m[1]!, baudRate: m[2] ? Number(m[2]) : 115200 };
  }
  if (value.startsWith('tcp:')) {
    const m = /^tcp:(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(value);
    const port = m?.[2] ? Number(m[2]) : 4403;
    if (!m || port < 1 || port > 65535) return 'expected tcp:host or tcp:host:4403';
    return { kind: 'tcp', host: m[1]!.replace(/^\[|\]$/g, ''), port };
  }
  return 'expected auto, sim, none, serial:/dev/ttyUSB0[@115200] or tcp:host[:4403]';
}

/** `90s`, `15m`, `24h`, `30d` → milliseconds. */
export function parseDuration(value: string): number | undefined {
  const m = /^(\d+)(s|m|h|d)$/.exec(value.trim());
  if (!m) return undefined;
  const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 's' | 'm' | 'h' | 'd'];
  return Number(m[1]) * unit;
}

const port = z.coerce.number().int().min(0).max(65535);
const duration = z.string().transform((v, ctx) => {
  const ms = parseDuration(v);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: 'expected a duration like 90s, 15m, 24h or 30d' });
    return z.NEVER;
  }
  return ms;
});

export const configSchema = z
  .object({
    DATA_DIR: z.string().min(1).default('./data'),
    HTTP_HOST: z.string().min(1).default('0.0.0.0'),
    HTTP_PORT: port.default(8080),
    RADIO: z
      .string()
      .default('auto')
      .transform((v, ctx) => {
        const spec = parseRadioSpec(v);
        if (typeof spec === 'string') {
          ctx.addIssue({ code: 'custom', message: spec });
          return z.NEVER;
        }
        return spec;
      }),
    /** Serial heartbeat interval; the firmware drops an API session that stays silent too long. */
    RADIO_HEARTBEAT_SECONDS: z.coerce.number().int().min(5).max(900).default(60),
    /** How long `RADIO=auto` waits for each serial port to answer the handshake. */
    RADIO_PROBE_TIMEOUT_MS: z.coerce.number().int().min(200).max(30_000).default(2_500),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    READINGS_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(90),
    /** node-cron expression for the retention job. */
    RETENTION_CRON: z.string().default('17 3 * * *'),
    PLUGINS: z
      .string()
      .default('')
      .transform((v) =>
        v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      ),
    SIM_HOST: z.string().default('127.0.0.1'),
    SIM_PORT: port.default(4403),
    SIM_NODES: z.coerce.number().int().min(1).max(5000).default(6),
    /** Centre of the simulated mesh, `lat,lon`. */
    SIM_CENTER: z
      .string()
      .default('47.3769,8.5417')
      .transform((v, ctx) => {
        const [lat, lon] = v.split(',').map((s) => Number(s.trim()));
        if (lat === undefined || lon === undefined || !(Math.abs(lat) <= 90) || !(Math.abs(lon) <= 180)) {
          ctx.addIssue({ code: 'custom', message: 'expected "latitude,longitude" in degrees' });
          return z.NEVER;
        }
        return { latitude: lat, longitude: lon };
      }),
    /** How much history the simulator replays to a newly connected client (0s for none). */
    SIM_BACKFILL: duration.prefault('24h'),
    /** Seconds between environment telemetry packets of each simulated node. */
    SIM_TELEMETRY_SECONDS: z.coerce.number().int().min(1).max(86_400).default(300),
    SIM_SEED: z.coerce.number().int().default(1),
  })
  .strict();

export type HubConfig = z.output<typeof configSchema>;

export const CONFIG_KEYS = Object.keys(configSchema.shape) as Array<keyof HubConfig>;
