/**
 * A simulated firmware 2.8 upgrade (SIM_RENUMBER_AFTER_MINUTES): every simulated node has a
 * public key; once, the given time after the first client connects, the first node in range takes the number firmware 2.8
 * derives from its key (CRC-32 of the 32 bytes) and keeps its key, as an upgraded node does. From
 * then on everything it sends comes from the new number (its NodeInfo names the new id), the
 * radio's node database lists it under the new number, and packets a client sends to the new
 * number reach it (the responder sees them addressed to the node it knows).
 *
 * The clock starts at the first client's connection, not at the simulator's start: a client that
 * connected after the move would find only the new number in the node database and never learn
 * the old one (a hub slow to start under load missed the move that way).
 */
import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { clone, create, fromBinary, type MessageInitShape, toBinary } from '@bufbuild/protobuf';
import { Mesh, Portnums } from '@meshtastic/protobufs';
import { nodeIdFromNum } from '../../domain/node.js';
import type { PacketResponder } from './responder.js';

type FromRadioInit = MessageInitShape<typeof Mesh.FromRadioSchema>;

/** A simulated node's public key: 32 bytes, fixed by its (first) number. */
export function simPublicKey(num: number): Uint8Array {
  return new Uint8Array(
    createHash('sha256')
      .update(`meshhub-sim-key:${num >>> 0}`)
      .digest(),
  );
}

export class SimRenumbering {
  /** The number firmware 2.8 gives the node. */
  readonly newNum: number;

  /** When it upgrades (ms, the simulator's clock), once the first client has connected. */
  private upgradeAt: number | undefined;

  constructor(
    /** The node's number before the upgrade. */
    readonly oldNum: number,
    /** How long after the first client connects it upgrades (ms). */
    readonly afterMs: number,
  ) {
    this.newNum = crc32(simPublicKey(oldNum)) >>> 0;
  }

  /** Starts the clock when the first client connects; later connections leave it as it is. */
  arm(now: number): void {
    this.upgradeAt ??= now + this.afterMs;
  }

  /** When the node upgrades, once armed. */
  get at(): number | undefined {
    return this.upgradeAt;
  }

  /** Whether the node goes by its new number at `now`. */
  done(now: number): boolean {
    return this.upgradeAt !== undefined && now >= this.upgradeAt;
  }

  /** The message as the mesh shows it at `now`: the node's packets and NodeInfo under its new number. */
  rewrite(message: FromRadioInit, now: number): FromRadioInit {
    if (!this.done(now)) return message;
    const variant = message.payloadVariant;
    if (variant?.case === 'packet' && variant.value.from === this.oldNum) {
      const packet = { ...variant.value, from: this.newNum };
      const data = packet.payloadVariant;
      if (
        data?.case === 'decoded' &&
        data.value.portnum === Portnums.PortNum.NODEINFO_APP &&
        data.value.payload
      ) {
        const user = this.renamed(fromBinary(Mesh.UserSchema, data.value.payload));
        packet.payloadVariant = {
          case: 'decoded',
          value: { ...data.value, payload: toBinary(Mesh.UserSchema, user) },
        };
      }
      return { ...message, payloadVariant: { case: 'packet', value: packet } };
    }
    if (variant?.case === 'nodeInfo' && variant.value.num === this.oldNum) {
      const info = { ...variant.value, num: this.newNum };
      if (info.user) info.user = this.renamed(create(Mesh.UserSchema, info.user));
      return { ...message, payloadVariant: { case: 'nodeInfo', value: info } };
    }
    return message;
  }

  /**
   * Packets to the new number reach the node the responder knows by its old one; once the node
   * has moved, nothing answers to its old number (texts to it go unacknowledged, as on the air).
   */
  wrap(responder: PacketResponder): PacketResponder {
    return {
      onPacket: (packet, client) => {
        const to = packet.to >>> 0;
        const moved = this.done(client.now());
        if (to === this.oldNum && moved) return;
        if (to !== this.newNum || !moved) return responder.onPacket(packet, client);
        const addressed = clone(Mesh.MeshPacketSchema, packet);
        addressed.to = this.oldNum;
        return responder.onPacket(addressed, client);
      },
    };
  }

  private renamed(user: Mesh.User): Mesh.User {
    const out = clone(Mesh.UserSchema, user);
    out.id = nodeIdFromNum(this.newNum);
    return out;
  }
}
