/** Heard packets for the packet log's tests, made by the hub's own decoder from a MeshPacket. */
import { create } from '@bufbuild/protobuf';
import { Mesh, Portnums } from '@meshtastic/protobufs';
import type { HeardPacket } from '../../src/domain/mesh.js';
import { decodeHeardPacket } from '../../src/mesh/packet-decoder.js';

/** A broadcast text (no payload) from !a1b2c3d4 with packet id `id`, as the radio hears it. */
export function heardPacket(id: number): HeardPacket {
  const packet = create(Mesh.MeshPacketSchema, {
    from: 0xa1b2c3d4,
    to: 0xffffffff,
    id,
    hopLimit: 3,
    payloadVariant: { case: 'decoded', value: { portnum: Portnums.PortNum.TEXT_MESSAGE_APP } },
  });
  return decodeHeardPacket(packet, Date.now(), 'radio')!;
}
