/**
 * The one config schema. Values come from environment variables (names as below) and, when
 * `CONFIG_FILE` names a JSON file, from that file (the environment wins). Every invalid value is
 * reported at once, by name; the hub then exits non-zero instead of limping on.
 */
import { z } from 'zod';
import { authSettings } from '../src/auth/settings.js';
import { backupSettings } from '../src/backup/settings.js';
import { duration, flag, int, list, parsedBy, port } from '../src/config/fields.js';
import { type LoadedSettings, loadSettings, type SettingsSlice } from '../src/config/load.js';
import { deviceHealthSettings } from '../src/device-health/settings.js';
import { parseAllowedHosts } from '../src/http/host-check.js';
import { liveSettings } from '../src/live/settings.js';
import { LOG_FORMATS } from '../src/log.js';
import { mcpHttpSettings } from '../src/mcp/settings.js';
import { meshApiSettings } from '../src/mesh-api/settings.js';
import { messagingSettings } from '../src/messaging/settings.js';
import { mqttSettings } from '../src/mqtt/settings.js';
import { nodesSettings } from '../src/nodes/settings.js';
import { notificationSettings } from '../src/notifications/settings.js';
import { packetLogSettings } from '../src/packets/settings.js';
import { retentionSettings } from '../src/retention/settings.js';
import { topologySettings } from '../src/topology/settings.js';
import { webUiSettings } from '../src/ui-server/settings.js';

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

/** The hub's own settings: where it keeps data, how it listens, the radio, the simulator, identity. */
export const hubSettings = z.object({
  DATA_DIR: z.string().min(1).default('./data'),
  HTTP_HOST: z.string().min(1).default('0.0.0.0'),
  HTTP_PORT: port.default(8080),
  /**
   * Host names the HTTP listeners answer to besides IP literals, localhost and the machine's own
   * name (`meshhub.example.org`, `*.example.org`); any other `Host` gets 421 (DNS rebinding).
   */
  HTTP_ALLOWED_HOSTS: z.string().default('').transform(parsedBy(parseAllowedHosts)),
  RADIO: z.string().default('auto').transform(parsedBy(parseRadioSpec)),
  /** Serial heartbeat interval; the firmware drops an API session that stays silent too long. */
  RADIO_HEARTBEAT_SECONDS: int(5, 900).default(60),
  /** How long `RADIO=auto` waits for each serial port to answer the handshake. */
  RADIO_PROBE_TIMEOUT_MS: int(200, 30_000).default(2_500),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** `auto`: readable lines when stdout is a terminal, JSON lines otherwise; `pretty` or `json` always. */
  LOG_FORMAT: z.enum(LOG_FORMATS).default('auto'),
  PLUGINS: list.default([]),
  /** External identity provider (all three together): its JWKS URL, `iss` and the `aud` our tokens must carry. */
  AUTH_JWKS_URL: z.string().optional(),
  AUTH_ISSUER: z.string().optional(),
  AUTH_AUDIENCE: z.string().optional(),
  /** Dotted path of the roles claim in the provider's tokens, e.g. `realm_access.roles`. */
  AUTH_ROLES_CLAIM: z.string().min(1).default('roles'),
  /** Let AUTH_JWKS_URL resolve to a private (LAN) address; off: public addresses and loopback only. */
  AUTH_JWKS_ALLOW_PRIVATE_NETWORK: flag.prefault('false'),
  /** Also listen on the spec's component ports, each serving only its component's routes. */
  HTTP_COMPONENT_PORTS: z
    .union([z.boolean(), z.string()])
    .default(false)
    .transform(parsedBy(parseComponentPorts)),
  SIM_HOST: z.string().default('127.0.0.1'),
  SIM_PORT: port.default(4403),
  SIM_NODES: int(1, 5000).default(6),
  /** Centre of the simulated mesh, `lat,lon`; unset: drawn from SYNC_SITE_ID, else 47.3769,8.5417 (simulator-actor.ts). */
  SIM_CENTER: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return undefined;
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
  SIM_TELEMETRY_SECONDS: int(1, 86_400).default(300),
  /** Unset: drawn from SYNC_SITE_ID, else 1 (simulator-actor.ts). */
  SIM_SEED: z.coerce.number().int().optional(),
  /** Percent of texts to simulated nodes that fail with a routing error (MAX_RETRANSMIT, NO_RESPONSE). */
  SIM_FAILURE_PERCENT: z.coerce.number().min(0).max(100).default(10),
  /** Multiplies the simulated acknowledgement and reply delays (0.1 for fast tests). */
  SIM_ACK_DELAY_SCALE: z.coerce.number().min(0.01).max(100).default(1),
  /** Minutes the wandering simulated node stays and is away each cycle (fractions allowed); unset: 10–60 min, seeded. */
  SIM_AWAY_MINUTES: z.coerce.number().gt(0).max(1440).optional(),
  /** Minutes after start when one simulated node takes the number firmware 2.8 derives from its key (fractions allowed); unset: never. */
  SIM_RENUMBER_AFTER_MINUTES: z.coerce.number().gt(0).max(525_600).optional(),
  /** Minutes between reboots of each simulated node (its uptime starts again; fractions allowed); unset: about nine days. */
  SIM_REBOOT_MINUTES: z.coerce.number().gt(0).max(43_200).optional(),

  /** Time zone for scheduled jobs (e.g. `Europe/Zurich`); unset: the system's local time, and no time-zone data is loaded. */
  SCHEDULE_TIMEZONE: z.string().min(1).optional(),
  /** Serve an interactive API documentation page beside the OpenAPI documents (off by default, as the audit spec says). */
  API_DOCS: flag.prefault('false'),
});

/**
 * The one config schema: the hub's own settings and every core module's slice (each declared
 * beside its module). Plugins' slices are checked in the same pass (loadConfig's `modules`).
 */
export const configSchema = z
  .object({
    ...hubSettings.shape,
    ...authSettings.shape,
    ...backupSettings.shape,
    ...deviceHealthSettings.shape,
    ...liveSettings.shape,
    ...mcpHttpSettings.shape,
    ...meshApiSettings.shape,
    ...messagingSettings.shape,
    ...mqttSettings.shape,
    ...packetLogSettings.shape,
    ...notificationSettings.shape,
    ...nodesSettings.shape,
    ...retentionSettings.shape,
    ...topologySettings.shape,
    ...webUiSettings.shape,
  })
  .strict();

export type HubConfig = z.output<typeof configSchema>;

/** The hub's and its core modules' settings, with the given slices (the enabled plugins'): see loadSettings. */
export function loadHubSettings(
  env: NodeJS.ProcessEnv,
  slices: readonly SettingsSlice[],
): LoadedSettings<HubConfig> {
  return loadSettings(env, configSchema, slices);
}

/** The hub's and its core modules' settings (see loadSettings). */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): HubConfig {
  return loadHubSettings(env, []).config;
}
