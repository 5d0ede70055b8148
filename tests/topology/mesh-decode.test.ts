/** RouteDiscovery and NeighborInfo as the topology reads them: SNR scaling, unknown SNRs, the ends of a route. */
import { create, toBinary } from '@bufbuild/protobuf';
import { Mesh } from '@meshtastic/protobufs';
import { describe, expect, it } from 'vitest';
import {
  decodeNeighborInfo,
  decodeTracerouteReply,
  tracerouteLinks,
} from '../../src/topology/mesh-decode.js';

const discovery = (init: Parameters<typeof create<typeof Mesh.RouteDiscoverySchema>>[1]) =>
  toBinary(Mesh.RouteDiscoverySchema, create(Mesh.RouteDiscoverySchema, init));

describe('decodeTracerouteReply', () => {
  it('reads SNRs as dB × 4, leaves INT8_MIN out as unknown, and ends each route at its far end', () => {
    const answer = decodeTracerouteReply(
      0xb,
      0xa,
      discovery({ route: [0xc], snrTowards: [25, -128], routeBack: [0xc], snrBack: [-14, 8] }),
    )!;
    expect(answer).toEqual({
      origin: '!0000000a',
      target: '!0000000b',
      route: [{ nodeId: '!0000000c', snr: 6.25 }, { nodeId: '!0000000b' }],
      routeBack: [
        { nodeId: '!0000000c', snr: -3.5 },
        { nodeId: '!0000000a', snr: 2 },
      ],
    });
    expect(tracerouteLinks(answer, 5)).toEqual([
      { from: '!0000000c', to: '!0000000a', snr: 6.25, lastHeard: 5, source: 'traceroute' },
      { from: '!0000000b', to: '!0000000c', lastHeard: 5, source: 'traceroute' },
      { from: '!0000000c', to: '!0000000b', snr: -3.5, lastHeard: 5, source: 'traceroute' },
      { from: '!0000000a', to: '!0000000c', snr: 2, lastHeard: 5, source: 'traceroute' },
    ]);
  });

  it('a direct answer without a route back (older firmware) has one hop and no way back', () => {
    expect(decodeTracerouteReply(0xb, 0xa, discovery({ snrTowards: [40] }))).toMatchObject({
      route: [{ nodeId: '!0000000b', snr: 10 }],
      routeBack: [],
    });
  });

  it('a payload that is not a RouteDiscovery is no answer', () => {
    expect(decodeTracerouteReply(1, 2, new Uint8Array([0xff, 0xff, 0xff]))).toBeUndefined();
  });
});

describe('decodeNeighborInfo', () => {
  it('links the reporter to each neighbour, leaving out itself and the broadcast address', () => {
    const payload = toBinary(
      Mesh.NeighborInfoSchema,
      create(Mesh.NeighborInfoSchema, {
        nodeId: 0xa,
        neighbors: [
          { nodeId: 0xb, snr: 5.5 },
          { nodeId: 0xa, snr: 1 },
          { nodeId: 0xffffffff, snr: 1 },
        ],
      }),
    );
    expect(decodeNeighborInfo(0xa, payload, 9)).toEqual([
      { from: '!0000000a', to: '!0000000b', snr: 5.5, lastHeard: 9, source: 'neighborinfo' },
    ]);
  });
});
