/** Heard packets for the packet log's tests, as src/mesh/packet-decoder.ts makes them. */
import type { HeardPacket, PacketMeta } from '../../src/domain/mesh.js';

export function heardPacket(
  init: Partial<Omit<HeardPacket, 'meta'>> & { meta?: Partial<PacketMeta> } = {},
): HeardPacket {
  const { meta, ...rest } = init;
  return {
    from: 0xa1b2c3d4,
    to: 0xffffffff,
    id: 1,
    portnum: 1,
    receivedAt: Date.now(),
    payload: new Uint8Array(),
    readings: [],
    nodes: [],
    ...rest,
    meta: {
      channel: 0,
      hopLimit: 3,
      payloadBytes: 0,
      wantAck: false,
      wantResponse: false,
      requestId: 0,
      replyId: 0,
      viaMqtt: false,
      ...meta,
    },
  };
}
