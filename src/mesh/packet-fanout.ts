/**
 * One way from a heard mesh packet to the bus, for the radio and for MQTT gateways alike
 * (docs/architecture.md "Meshtastic facts": the same packet arrives through several gateways, and through
 * the hub's own radio; dedupe on (from, packet id)).
 *
 * The first sighting of (from, id) is announced: `mesh.packet`, then `node.updated` for every
 * node fact, `mesh.text`, `mesh.routing`; the caller commits its readings. A later sighting
 * announces only `mesh.heard` (marked as a duplicate) and is reported as one. Only decoded packets come here: a copy the
 * hub could not decrypt must never hide a copy it can read.
 */
import { Portnums } from '@meshtastic/protobufs';
import type { HubBus } from '../domain/events.js';
import type { HeardPacket, HeardVia, MeshPacketFanOut } from '../domain/mesh.js';
import type { PacketDedupe } from './packet-dedupe.js';

export class MeshFanOut implements MeshPacketFanOut {
  constructor(
    private readonly deps: {
      bus: HubBus;
      dedupe: PacketDedupe;
      /** Counts a packet announced, by port name and path. */
      onPacket?: (port: string, via: HeardVia) => void;
    },
  ) {}

  /** Announces a first sighting and returns true; returns false for a repeat. */
  deliver(packet: HeardPacket, via: HeardVia, now = Date.now()): boolean {
    const { bus } = this.deps;
    const first = this.deps.dedupe.firstSighting(packet.from, packet.id, now);
    bus.emit('mesh.heard', { packet, via, duplicate: !first });
    if (!first) return false;
    this.deps.onPacket?.(Portnums.PortNum[packet.portnum] ?? String(packet.portnum), via);
    bus.emit('mesh.packet', {
      portnum: packet.portnum,
      from: packet.from,
      to: packet.to,
      id: packet.id,
      receivedAt: packet.receivedAt,
      via,
    });
    for (const node of packet.nodes) bus.emit('node.updated', node);
    if (packet.text) bus.emit('mesh.text', packet.text);
    if (packet.routing) bus.emit('mesh.routing', packet.routing);
    return true;
  }
}
