/**
 * The one config schema. Values come from environment variables (names as below) and, when
 * `CONFIG_FILE` names a JSON file, from that file (the environment wins). Every invalid value is
 * reported at once, by name; the hub then exits non-zero instead of limping on.
 */
import { z } from 'zod';
import { parseChannelKeys } from '../mesh/mqtt/channel-keys.js';
import { DEFAULT_MAP_TILES, parseMapTiles } from '../ui-server/map-tiles-setting.js';

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

/** `10/5m` → at most 10 per 5 minutes. */
export function parseRate(value: string): { count: number; windowMs: number } | undefined {
  const m = /^(\d{1,9})\/(\d+[smhd])$/.exec(value.trim());
  const windowMs = m ? parseDuration(m[2]!) : undefined;
  if (!m || windowMs === undefined || windowMs === 0 || Number(m[1]) < 1) return undefined;
  return { count: Number(m[1]), windowMs };
}

const rate = z.string().transform((v, ctx) => {
  const parsed = parseRate(v);
  if (!parsed) {
    ctx.addIssue({ code: 'custom', message: 'expected a count per window like 10/5m or 100/1h' });
    return z.NEVER;
  }
  return parsed;
});

/** `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`), or a JSON boolean from CONFIG_FILE. */
const flag = z.union([z.boolean(), z.string()]).transform((v, ctx) => {
  if (typeof v === 'boolean') return v;
  const s = v.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(s)) return true;
  if (['false', '0', 'no', 'off', ''].includes(s)) return false;
  ctx.addIssue({ code: 'custom', message: 'expected true or false' });
  return z.NEVER;
});

export const COMPONENT_PORT_DEFAULTS = {
  ingestion: 8001,
  weather: 8002,
  gateway: 8003,
  billing: 8004,
} as const;
export type ComponentPorts = Partial<Record<keyof typeof COMPONENT_PORT_DEFAULTS, number>>;

/** `true` (the spec's 8001–8004), `false`, or `ingestion=18001,weather=18002,…` (0: any free port). */
export function parseComponentPorts(value: string | boolean): ComponentPorts | string {
  const s = String(value).trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(s)) return { ...COMPONENT_PORT_DEFAULTS };
  if (['false', '0', 'no', 'off', ''].includes(s)) return {};
  const out: ComponentPorts = {};
  for (const entry of s.split(',')) {
    const m = /^\s*(ingestion|weather|gateway|billing)\s*=\s*(\d{1,5})\s*$/.exec(entry);
    if (!m || Number(m[2]) > 65535)
      return 'expected true, false or component=port pairs, e.g. ingestion=8001,weather=8002';
    out[m[1] as keyof ComponentPorts] = Number(m[2]);
  }
  return out;
}

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
    /** External identity provider (all three together): its JWKS URL, `iss` and the `aud` our tokens must carry. */
    AUTH_JWKS_URL: z.string().optional(),
    AUTH_ISSUER: z.string().optional(),
    AUTH_AUDIENCE: z.string().optional(),
    /** Dotted path of the roles claim in the provider's tokens, e.g. `realm_access.roles`. */
    AUTH_ROLES_CLAIM: z.string().min(1).default('roles'),
    /** Lifetime of tokens from POST /api/v1/auth/token. */
    AUTH_TOKEN_TTL: duration.prefault('1h'),
    /** Messages one subscriber may post per window, e.g. `10/5m` (429 past it). */
    MESSAGE_RATE_PER_SUBSCRIBER: rate.prefault('10/5m'),
    /** Messages all subscribers together may post to one node per window. */
    MESSAGE_RATE_PER_NODE: rate.prefault('6/5m'),
    /** Share of airtime our texts may take: after each send the queue waits airtime × (100 / % − 1). */
    MESSAGE_AIRTIME_PERCENT: z.coerce.number().min(1).max(100).default(10),
    /** How long a sent packet waits for any acknowledgement before it is retried. */
    MESSAGE_ACK_TIMEOUT: duration.prefault('60s'),
    /** Retries after a timeout or a transient routing error (MAX_RETRANSMIT, NO_ROUTE, ...). */
    MESSAGE_MAX_RETRIES: z.coerce.number().int().min(0).max(3).default(3),
    /** Wait before each retry. */
    MESSAGE_RETRY_DELAY: duration.prefault('30s'),
    /** MQTT listen address; defaults to HTTP_HOST (one knob for "LAN" or "this machine only"). */
    MQTT_HOST: z.string().min(1).optional(),
    MQTT_PORT: port.default(1883),
    /** Also serve MQTT over WebSocket on the HTTP port at /mqtt. */
    MQTT_WEBSOCKET: flag.prefault('false'),
    /** Anonymous clients may connect (as devices: publish readings only). */
    MQTT_ALLOW_ANONYMOUS: flag.prefault('false'),
    MQTT_MAX_CONNECTIONS: z.coerce.number().int().min(1).max(100_000).default(1_000),
    /** Largest MQTT packet accepted; a client announcing a bigger one is disconnected. */
    MQTT_MAX_PACKET_BYTES: z.coerce.number().int().min(1_024).max(16_777_216).default(262_144),
    /** A subscriber that does not read for this long is disconnected (Aedes drainTimeout; never 0). */
    MQTT_DRAIN_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(600).default(30),
    /** Meshtastic channel keys for MQTT uplink, `Name=base64,…`; LongFast=AQ== is built in. */
    MESH_CHANNEL_KEYS: z
      .string()
      .default('')
      .transform((v, ctx) => {
        const keys = parseChannelKeys(v);
        if (typeof keys === 'string') {
          ctx.addIssue({ code: 'custom', message: keys });
          return z.NEVER;
        }
        return keys;
      }),
    /** Publish Home Assistant MQTT discovery configs for every node's metrics. */
    HA_DISCOVERY: flag.prefault('true'),
    /** A node not heard for this long is `offline` on its availability topic (and in Home Assistant). */
    NODE_OFFLINE_AFTER: duration.prefault('2h'),
    /** Also listen on the spec's component ports, each serving only its component's routes. */
    HTTP_COMPONENT_PORTS: z
      .union([z.boolean(), z.string()])
      .default(false)
      .transform((v, ctx) => {
        const ports = parseComponentPorts(v);
        if (typeof ports === 'string') {
          ctx.addIssue({ code: 'custom', message: ports });
          return z.NEVER;
        }
        return ports;
      }),
    /** Web map background: an online tile URL template, or a local raster .pmtiles/.mbtiles file the hub serves. */
    MAP_TILES: z
      .string()
      .default(DEFAULT_MAP_TILES)
      .transform((v, ctx) => {
        const tiles = parseMapTiles(v);
        if (typeof tiles === 'string') {
          ctx.addIssue({ code: 'custom', message: tiles });
          return z.NEVER;
        }
        return tiles;
      }),
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
    /** Percent of texts to simulated nodes that fail with a routing error (MAX_RETRANSMIT, NO_RESPONSE). */
    SIM_FAILURE_PERCENT: z.coerce.number().min(0).max(100).default(10),
    /** Multiplies the simulated acknowledgement and reply delays (0.1 for fast tests). */
    SIM_ACK_DELAY_SCALE: z.coerce.number().min(0.01).max(100).default(1),
  })
  .strict();

export type HubConfig = z.output<typeof configSchema>;

export const CONFIG_KEYS = Object.keys(configSchema.shape) as Array<keyof HubConfig>;
