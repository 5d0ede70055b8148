/**
 * Test fixtures for the broker: a whole hub in-process (real SQLite file, Aedes on a loopback
 * port, HTTP on a loopback port), a local ES256 JWT issuer, an scrypt-hashed in-memory user
 * store, MQTT clients from the `mqtt` package, and Meshtastic ServiceEnvelopes built with
 * `@meshtastic/protobufs` and encrypted with the documented AES-CTR nonce.
 */
import { scrypt } from 'node:crypto';
import { promisify } from 'node:util';
import { create, type MessageInitShape, toBinary } from '@bufbuild/protobuf';
import { Mesh, Mqtt, Portnums, Telemetry } from '@meshtastic/protobufs';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { connectAsync, type IClientOptions, type MqttClient } from 'mqtt';
import { pino } from 'pino';
import { createHub, type Hub } from '../../hub/main.js';
import { createTokenVerifier, type TokenVerifier } from '../../src/auth/jwt-verifier.js';
import { HubUserService } from '../../src/auth/user-service.js';
import { channelCipher, channelHash, expandChannelKey } from '../../src/mesh/mqtt/channel-crypto.js';
import { mqttOf, tempHubConfig, testHubOf } from '../helpers/hub.js';

const _scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number) => Promise<Buffer>;

/** An scrypt-hashed in-memory user store, compared in constant time. */
export interface LocalIssuer {
  verifier: TokenVerifier;
  token(
    roles: string[],
    options?: { subject?: string; expiresIn?: string | number; issuer?: string },
  ): Promise<string>;
}

export const TEST_ISSUER = 'https://hub.test/local';

/** A local ES256 issuer and a TokenVerifier trusting it (the shape of the hub's own issuer). */
export async function localIssuer(): Promise<LocalIssuer> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: 'test-1', alg: 'ES256', use: 'sig' };
  const verifier = createTokenVerifier([{ issuer: TEST_ISSUER, audience: 'meshhub', keys: { keys: [jwk] } }]);
  return {
    verifier,
    token: (roles, options = {}) =>
      new SignJWT({ roles, preferred_username: options.subject ?? 'sensor-1' })
        .setProtectedHeader({ alg: 'ES256', kid: 'test-1' })
        .setIssuer(options.issuer ?? TEST_ISSUER)
        .setSubject(options.subject ?? 'sensor-1')
        .setAudience('meshhub')
        .setIssuedAt()
        .setExpirationTime(options.expiresIn ?? '10m')
        .sign(privateKey),
  };
}

export interface MqttTestHub {
  hub: Hub;
  dataDir: string;
  baseUrl: string;
  mqttUrl: string;
  stop(): Promise<void>;
}

/** A whole hub (RADIO=none unless env says otherwise) with its broker and HTTP on free loopback ports. */
export async function startMqttHub(
  env: Record<string, string> = {},
  auth: {
    /** Users created in the hub's own user store before it starts (MQTT logins check them). */
    users?: Array<{ username: string; password: string; roles: string[] }>;
    /** Replaces the hub identity's token verifier. */
    tokenVerifier?: TokenVerifier;
  } = {},
  /** Collects every log line (JSON, debug level and up) when given. */
  logLines?: string[],
): Promise<MqttTestHub> {
  const { dataDir, config } = tempHubConfig('mqtt', { RADIO: 'none', ...env });
  const log = logLines
    ? pino({ level: 'debug' }, { write: (line: string) => void logLines.push(line) })
    : pino({ level: 'silent' });
  const hub = await createHub(config, {
    log,
    defaultMetrics: false,
    ...(auth.tokenVerifier ? { tokenVerifier: auth.tokenVerifier } : {}),
  });
  const users = new HubUserService(hub.store.db);
  for (const user of auth.users ?? []) await users.add(user);
  await hub.start();
  return { ...testHubOf(hub, dataDir), mqttUrl: `mqtt://127.0.0.1:${mqttOf(hub).port}` };
}

/**
 * The value of the first series of `name` on the hub's /metrics (at `baseUrl`) whose labels
 * include `labels` (`'outcome="stored"'`); 0 when there is none yet.
 */
export async function metricValue(baseUrl: string, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line ? Number(line.split(' ').pop()) : 0;
}

const clients: MqttClient[] = [];

/** Connects (no reconnects, so a refusal is final); every client is ended by `endClients`. */
export async function connect(url: string, options: IClientOptions = {}): Promise<MqttClient> {
  const client = await connectAsync(url, { reconnectPeriod: 0, connectTimeout: 5_000, ...options });
  clients.push(client);
  return client;
}

export async function endClients(): Promise<void> {
  await Promise.all(clients.splice(0).map((c) => c.endAsync(true).catch(() => {})));
}

/** Resolves with the CONNACK return code of a refused connection (rejects if it connected). */
export async function refusedCode(url: string, options: IClientOptions = {}): Promise<number> {
  try {
    const client = await connect(url, options);
    await client.endAsync(true);
  } catch (error) {
    return (error as { code?: number }).code ?? -1;
  }
  throw new Error('the connection was accepted');
}

/** The QoS granted per filter in the SUBACK (128: refused), whether or not the client treats a refusal as an error. */
export async function grantedQos(client: MqttClient, filters: string[]): Promise<number[]> {
  try {
    return (await client.subscribeAsync(filters)).map((g) => g.qos);
  } catch (error) {
    const granted = (error as { packet?: { granted?: Array<number | { qos: number }> } }).packet?.granted;
    if (!granted) throw error;
    return granted.map((g) => (typeof g === 'number' ? g : g.qos));
  }
}

/** Collects messages on `filter` (retained ones included) until `until` says enough. */
export function collect(
  client: MqttClient,
  filter: string,
): { messages: Array<{ topic: string; payload: string; retain: boolean }>; ready: Promise<void> } {
  const messages: Array<{ topic: string; payload: string; retain: boolean }> = [];
  client.on('message', (topic, payload, packet) => {
    if (topicMatches(filter, topic))
      messages.push({ topic, payload: payload.toString(), retain: packet.retain });
  });
  const ready = client.subscribeAsync(filter, { qos: 0 }).then(() => undefined);
  return { messages, ready };
}

function topicMatches(filter: string, topic: string): boolean {
  const f = filter.split('/');
  const t = topic.split('/');
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '#') return true;
    if (f[i] !== '+' && f[i] !== t[i]) return false;
  }
  return f.length === t.length;
}

// ---- Meshtastic envelopes -------------------------------------------------------------------

export type TelemetryInit = MessageInitShape<typeof Telemetry.TelemetrySchema>;

export interface EnvelopeOptions {
  from: number;
  id: number;
  portnum: number;
  /** The Data.payload bytes (a Telemetry, Position, User protobuf). */
  payload: Uint8Array;
  channel?: string;
  /** base64 psk as the apps show it; `AQ==` (default key) unless said otherwise; `AA==` sends it unencrypted. */
  psk?: string;
  gatewayId?: string;
  rxTimeSeconds?: number;
  rxSnr?: number;
}

export function telemetryPayload(init: TelemetryInit): Uint8Array {
  return toBinary(Telemetry.TelemetrySchema, create(Telemetry.TelemetrySchema, init));
}

/** A ServiceEnvelope as a gateway's MQTT module publishes it on `…/2/e/<channel>/<gateway>`. */
export function envelope(options: EnvelopeOptions): Uint8Array {
  const channel = options.channel ?? 'LongFast';
  const key = expandChannelKey(Buffer.from(options.psk ?? 'AQ==', 'base64'));
  const data = toBinary(
    Mesh.DataSchema,
    create(Mesh.DataSchema, { portnum: options.portnum, payload: options.payload }),
  );
  const packet = create(Mesh.MeshPacketSchema, {
    from: options.from,
    to: 0xffffffff,
    id: options.id,
    channel: channelHash(channel, key),
    hopLimit: 3,
    hopStart: 3,
    rxTime: options.rxTimeSeconds ?? 0,
    rxSnr: options.rxSnr ?? 0,
    payloadVariant: key
      ? { case: 'encrypted', value: channelCipher(key, options.id, options.from, data) }
      : {
          case: 'decoded',
          value: create(Mesh.DataSchema, { portnum: options.portnum, payload: options.payload }),
        },
  });
  return toBinary(
    Mqtt.ServiceEnvelopeSchema,
    create(Mqtt.ServiceEnvelopeSchema, {
      packet,
      channelId: channel,
      gatewayId: options.gatewayId ?? '!0000beef',
    }),
  );
}

/**
 * A ServiceEnvelope around any decoded MeshPacket (a text, an ACK), its Data encrypted with the
 * channel key (the default key unless `psk` says otherwise), as a gateway uplinks it.
 */
export function envelopeOf(
  packet: Mesh.MeshPacket,
  options: { channel?: string; psk?: string; gatewayId?: string } = {},
): Uint8Array {
  if (packet.payloadVariant.case !== 'decoded') throw new Error('envelopeOf takes a decoded packet');
  const channel = options.channel ?? 'LongFast';
  const key = expandChannelKey(Buffer.from(options.psk ?? 'AQ==', 'base64'));
  if (!key) throw new Error('envelopeOf encrypts: give a channel key');
  const data = toBinary(Mesh.DataSchema, packet.payloadVariant.value);
  const encrypted = create(Mesh.MeshPacketSchema, {
    ...packet,
    channel: channelHash(channel, key),
    payloadVariant: { case: 'encrypted', value: channelCipher(key, packet.id, packet.from, data) },
  });
  return toBinary(
    Mqtt.ServiceEnvelopeSchema,
    create(Mqtt.ServiceEnvelopeSchema, {
      packet: encrypted,
      channelId: channel,
      gatewayId: options.gatewayId ?? '!0000beef',
    }),
  );
}

export function envTelemetryEnvelope(
  from: number,
  id: number,
  metrics: MessageInitShape<typeof Telemetry.EnvironmentMetricsSchema>,
  options: Partial<EnvelopeOptions> = {},
): Uint8Array {
  return envelope({
    from,
    id,
    portnum: Portnums.PortNum.TELEMETRY_APP,
    payload: telemetryPayload({ time: 1, variant: { case: 'environmentMetrics', value: metrics } }),
    ...options,
  });
}

export function meshTopic(channel = 'LongFast', gateway = '!0000beef', root = 'msh/EU_868'): string {
  return `${root}/2/e/${channel}/${gateway}`;
}

/** Reads /api/v1/weather/latest for one node (undefined while it has nothing). */
export async function latestOf(
  baseUrl: string,
  nodeId: string,
): Promise<Record<string, unknown> | undefined> {
  const res = await fetch(`${baseUrl}/api/v1/weather/latest?node_id=${encodeURIComponent(nodeId)}`);
  const body = (await res.json()) as { data: Array<Record<string, unknown>> };
  return body.data[0];
}
