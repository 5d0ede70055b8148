/** Settings of the embedded MQTT broker and what it publishes. */
import { z } from 'zod';
import { duration, flag, int, parsedBy, port } from '../config/fields.js';
import { parseChannelKeys } from '../mesh/mqtt/channel-keys.js';
import { parseTrustedGateways } from '../mesh/mqtt/trusted-gateways.js';
import { DEFAULT_RETAINED_LIMITS } from './retained.js';

export const mqttSettings = z.object({
  /** MQTT listen address; defaults to HTTP_HOST (one knob for "LAN" or "this machine only"). */
  MQTT_HOST: z.string().min(1).optional(),
  MQTT_PORT: port.default(1883),
  /** Also serve MQTT over WebSocket on the HTTP port at /mqtt. */
  MQTT_WEBSOCKET: flag.prefault('false'),
  /** Anonymous clients may connect (as devices: publish readings only). */
  MQTT_ALLOW_ANONYMOUS: flag.prefault('false'),
  MQTT_MAX_CONNECTIONS: int(1, 100_000).default(1_000),
  /** Largest MQTT packet accepted; a client announcing a bigger one is disconnected. */
  MQTT_MAX_PACKET_BYTES: int(1_024, 16_777_216).default(262_144),
  /** A subscriber that does not read for this long is disconnected (Aedes drainTimeout; never 0). */
  MQTT_DRAIN_TIMEOUT_SECONDS: int(1, 600).default(30),
  /** Meshtastic channel keys for MQTT uplink, `Name=base64,…`; LongFast=AQ== is built in. */
  MESH_CHANNEL_KEYS: z.string().default('').transform(parsedBy(parseChannelKeys)),
  /**
   * Gateways whose unencrypted uplink is believed and whose texts to the hub's node may enter a
   * conversation: `!a1b2c3d4` (any device login naming it) or `!a1b2c3d4@mqtt-user`; none by default.
   */
  MESH_TRUSTED_GATEWAYS: z.string().default('').transform(parsedBy(parseTrustedGateways)),
  /** Retained messages kept from clients (outside msh/# and meshhub/ingest/#, where none are kept). */
  MQTT_RETAINED_MAX_MESSAGES: int(0, 100_000).default(DEFAULT_RETAINED_LIMITS.maxMessages),
  /** Bytes (payload and topic) of clients' retained messages kept, all together. */
  MQTT_RETAINED_MAX_BYTES: int(0, 268_435_456).default(DEFAULT_RETAINED_LIMITS.maxBytes),
  /** Publish Home Assistant MQTT discovery configs for every node's metrics. */
  HA_DISCOVERY: flag.prefault('true'),
  /** A node not heard for this long is `offline` on its availability topic (and in Home Assistant). */
  NODE_OFFLINE_AFTER: duration.prefault('2h'),
});
