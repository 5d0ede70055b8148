/**
 * Meshtastic MQTT uplink → the same domain objects the radio path produces (readings, node
 * updates, texts and ACKs), from the two formats gateways publish (docs/architecture.md "Meshtastic facts"):
 *
 * - `<root>/2/e/<channel>/<!gateway>` (and the older `/2/c/`): a protobuf `ServiceEnvelope`
 *   whose `packet` is usually encrypted with the channel key; decrypted here with the
 *   configured keys, the named channel's first, then any key whose hash matches
 *   `MeshPacket.channel`. A decryption is accepted only when the bytes decode as `Data` with a
 *   known port: CTR carries no integrity check, so that is how a wrong key shows.
 * - `<root>/2/json/<channel>/<!gateway>`: firmware < 2.8 JSON (legacy-json.ts).
 *
 * Unencrypted packets (a `decoded` MeshPacket in the envelope, and all legacy JSON) prove nothing:
 * whoever may publish on `msh/#` can write one in any node's name. They are refused unless the
 * gateway is in MESH_TRUSTED_GATEWAYS (trusted-gateways.ts); legacy JSON is refused before it is
 * parsed. README "MQTT: mesh packets and retained messages".
 *
 * Pure: no I/O, no clock but the one given. Every failure is a result with a reason, never a throw.
 */
import { fromBinary } from '@bufbuild/protobuf';
import { Mesh, Mqtt, Portnums } from '@meshtastic/protobufs';
import type { HeardPacket } from '../../domain/mesh.js';
import { PayloadDecodeError } from '../errors.js';
import { decodeHeardPacket } from '../packet-decoder.js';
import { channelCipher } from './channel-crypto.js';
import type { ChannelKeyring } from './channel-keys.js';
import { decodeLegacyJson } from './legacy-json.js';
import { NO_TRUSTED_GATEWAYS, type TrustedGateways } from './trusted-gateways.js';

export type MeshTopic =
  | { kind: 'envelope' | 'json'; channel: string; gatewayId: string }
  /** Map reports (`/2/map/`), status topics and anything else under the root. */
  | { kind: 'other' };

/** Where in `<root…>/2/<kind>/<channel>/<gateway>` the kind is: the root may have any depth. */
export function parseMeshTopic(topic: string): MeshTopic {
  const levels = topic.split('/');
  const n = levels.length;
  if (n < 5 || levels[n - 4] !== '2') return { kind: 'other' };
  const kind = levels[n - 3];
  const channel = levels[n - 2]!;
  const gatewayId = levels[n - 1]!;
  if (!channel || !gatewayId) return { kind: 'other' };
  if (kind === 'e' || kind === 'c') return { kind: 'envelope', channel, gatewayId };
  if (kind === 'json') return { kind: 'json', channel, gatewayId };
  return { kind: 'other' };
}

export interface UplinkPacket extends HeardPacket {
  kind: 'packet';
  /** The gateway named by the topic. */
  gatewayId: string;
  /** The gateway is in MESH_TRUSTED_GATEWAYS (for the publishing MQTT user). */
  trusted: boolean;
}

export type UplinkRejectReason =
  | 'malformed_envelope'
  | 'undecryptable'
  | 'malformed_payload'
  | 'malformed_json'
  /** Unencrypted (or legacy JSON) from a gateway not in MESH_TRUSTED_GATEWAYS. */
  | 'unencrypted_untrusted';

export type UplinkResult =
  | UplinkPacket
  | { kind: 'rejected'; reason: UplinkRejectReason; detail: string }
  /** Nothing for the hub: map reports, PKI direct messages, packets without a sender. */
  | { kind: 'ignored'; reason: string };

export interface UplinkDecoderOptions {
  keys: ChannelKeyring;
  /**
   * A gateway's `rx_time` is used as the receive time only within this distance of the hub's
   * clock (uplink is live: firmware does not buffer it); a gateway without a set clock sends 0
   * or 1970-plus-uptime. Default 10 minutes.
   */
  rxTimeToleranceMs?: number;
  /** MESH_TRUSTED_GATEWAYS; none by default. */
  trustedGateways?: TrustedGateways;
}

export class MeshUplinkDecoder {
  private readonly tolerance: number;
  private readonly trust: TrustedGateways;

  constructor(private readonly options: UplinkDecoderOptions) {
    this.tolerance = options.rxTimeToleranceMs ?? 600_000;
    this.trust = options.trustedGateways ?? NO_TRUSTED_GATEWAYS;
  }

  /** `publisher`: the MQTT username that published it (for gateways bound to a login). */
  decode(topic: string, payload: Uint8Array, nowMs: number, publisher?: string): UplinkResult {
    const parsed = parseMeshTopic(topic);
    if (parsed.kind === 'other') return { kind: 'ignored', reason: 'not_a_packet_topic' };
    const trusted = this.trust.trusts(parsed.gatewayId, publisher);
    if (parsed.kind === 'json') {
      if (!trusted) return untrusted(parsed.gatewayId, 'legacy JSON');
      const result = decodeLegacyJson(payload, nowMs, (ms) => this.plausible(ms, nowMs));
      return result.kind === 'packet' ? { ...result, gatewayId: parsed.gatewayId, trusted } : result;
    }
    return this.decodeEnvelope(parsed.channel, parsed.gatewayId, trusted, payload, nowMs);
  }

  private plausible(receivedMs: number, nowMs: number): boolean {
    return receivedMs > 0 && Math.abs(receivedMs - nowMs) <= this.tolerance;
  }

  private decodeEnvelope(
    topicChannel: string,
    gatewayId: string,
    topicTrusted: boolean,
    payload: Uint8Array,
    nowMs: number,
  ): UplinkResult {
    let envelope: Mqtt.ServiceEnvelope;
    try {
      envelope = fromBinary(Mqtt.ServiceEnvelopeSchema, payload);
    } catch (error) {
      return { kind: 'rejected', reason: 'malformed_envelope', detail: (error as Error).message };
    }
    const packet = envelope.packet;
    if (!packet)
      return { kind: 'rejected', reason: 'malformed_envelope', detail: 'ServiceEnvelope.packet is missing' };
    if (packet.from === 0) return { kind: 'ignored', reason: 'no_sender' };

    // The envelope must not name another gateway than the topic does (the trust is the topic's).
    const trusted = topicTrusted && (envelope.gatewayId === '' || envelope.gatewayId === gatewayId);
    const variant = packet.payloadVariant;
    let data: Mesh.Data;
    if (variant.case === 'decoded') {
      if (!trusted) return untrusted(gatewayId, 'an unencrypted packet');
      data = variant.value;
    } else if (variant.case === 'encrypted') {
      // PKI-encrypted direct messages need the recipient's private key, which the hub never has.
      if (packet.pkiEncrypted || topicChannel === 'PKI') return { kind: 'ignored', reason: 'pki' };
      const opened = this.decrypt(envelope.channelId || topicChannel, packet, variant.value);
      if (!opened) {
        return {
          kind: 'rejected',
          reason: 'undecryptable',
          detail: `no configured key opens a packet on channel "${envelope.channelId || topicChannel}" (hash ${packet.channel})`,
        };
      }
      data = opened;
    } else {
      return { kind: 'rejected', reason: 'malformed_envelope', detail: 'MeshPacket carries no payload' };
    }

    packet.payloadVariant = { case: 'decoded', value: data };
    // rx_time is the receiving gateway's clock: kept when plausible, else the hub's receive time.
    if (!this.plausible(packet.rxTime * 1000, nowMs)) packet.rxTime = 0;
    try {
      const receivedAt = packet.rxTime !== 0 ? packet.rxTime * 1000 : nowMs;
      const heard = decodeHeardPacket(packet, nowMs, 'mqtt', receivedAt, gatewayId)!;
      return { kind: 'packet', ...heard, gatewayId, trusted };
    } catch (error) {
      if (!(error instanceof PayloadDecodeError)) throw error;
      return { kind: 'rejected', reason: 'malformed_payload', detail: error.message };
    }
  }

  private decrypt(
    channelName: string,
    packet: Mesh.MeshPacket,
    encrypted: Uint8Array,
  ): Mesh.Data | undefined {
    // A port the protobufs do not name yet (newer firmware sends 35-37 and more) is kept only when
    // no key opens the packet to a known port: a wrong key's garbage must never shadow the right key.
    let unnamed: Mesh.Data | undefined;
    for (const { key } of this.options.keys.candidates(channelName, packet.channel)) {
      if (!key) continue;
      const plain = channelCipher(key, packet.id, packet.from, encrypted);
      try {
        const data = fromBinary(Mesh.DataSchema, plain);
        // A wrong key's garbage rarely parses at all, and hardly ever names a port we know.
        if (data.portnum !== Portnums.PortNum.UNKNOWN_APP && Portnums.PortNum[data.portnum] !== undefined)
          return data;
        if (!unnamed && data.portnum > 0 && data.portnum <= MAX_PORTNUM) unnamed = data;
      } catch {
        // Garbage from a wrong key: try the next one.
      }
    }
    return unnamed;
  }
}

/** Meshtastic's port numbers stop at MAX (511); anything above is a wrong key's garbage. */
const MAX_PORTNUM = Portnums.PortNum.MAX;

function untrusted(gatewayId: string, what: string): UplinkResult {
  return {
    kind: 'rejected',
    reason: 'unencrypted_untrusted',
    detail: `${what} from gateway ${gatewayId.slice(0, 32)}, which is not in MESH_TRUSTED_GATEWAYS`,
  };
}
