/**
 * Topology test helpers: a simulated mesh the test controls (it answers traceroutes and reports
 * neighbours as src/mesh/simulator/topology-responder.ts does, or stays silent so the test answers
 * itself), a hub on RADIO=tcp against it, and packets as the mesh would send them.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { Mesh, Portnums } from '@meshtastic/protobufs';
import type { MeshLink } from '../../src/domain/mesh.js';
import { createSimNetwork, type SimNetwork } from '../../src/mesh/simulator/nodes.js';
import type { PacketResponder, SimClient } from '../../src/mesh/simulator/responder.js';
import type { MeshSimulator } from '../../src/mesh/simulator/simulator.js';
import { createTopologyResponder } from '../../src/mesh/simulator/topology-responder.js';
import { startTestHub, type TestHub, waitFor } from '../helpers/hub.js';
import { TEST_MESH_CENTER, testSimulator } from '../helpers/simulator.js';
import { FAST_MESSAGING } from '../messaging/helpers.js';

export interface TopologySim {
  sim: MeshSimulator;
  port: number;
  network: SimNetwork;
  /** Every packet the hub handed the radio. */
  packets: Mesh.MeshPacket[];
  /** The hub's session, to inject packets as the radio hears them. */
  client(): Promise<SimClient>;
  traceroutes(): Mesh.MeshPacket[];
}

/** `answer`: the simulator answers traceroutes itself; `silent`: the test does. */
export async function startTopologySim(mode: 'answer' | 'silent', seed = 11): Promise<TopologySim> {
  const packets: Mesh.MeshPacket[] = [];
  let session: SimClient | undefined;
  const topology = createTopologyResponder({ delayScale: 0.1 });
  const responder: PacketResponder = {
    onStart(client) {
      session = client;
      if (mode === 'answer') topology.onStart?.(client);
    },
    onPacket(packet, client) {
      packets.push(packet);
      session = client;
      if (mode === 'answer') return topology.onPacket(packet, client);
    },
  };
  const sim = testSimulator({ seed, telemetryIntervalMs: 3_600_000, responder });
  const { port } = await sim.start();
  return {
    sim,
    port,
    network: createSimNetwork({ seed, nodeCount: 6, center: TEST_MESH_CENTER }),
    packets,
    client: () => waitFor(() => session, 10_000, 'the hub’s simulator session'),
    traceroutes: () =>
      packets.filter(
        (p) =>
          p.payloadVariant.case === 'decoded' &&
          p.payloadVariant.value.portnum === Portnums.PortNum.TRACEROUTE_APP,
      ),
  };
}

export async function hubOn(sim: TopologySim, env: Record<string, string> = {}): Promise<TestHub> {
  return startTestHub({
    ...FAST_MESSAGING,
    RADIO: `tcp:127.0.0.1:${sim.port}`,
    TRACEROUTE_TIMEOUT: '5s',
    ...env,
  });
}

/** Every `mesh.link` the hub announces from now on. */
export function linkEvents(t: TestHub): MeshLink[] {
  const seen: MeshLink[] = [];
  t.hub.bus.on('test', 'mesh.link', (link) => seen.push(link));
  return seen;
}

function decoded(
  from: number,
  to: number,
  portnum: Portnums.PortNum,
  payload: Uint8Array,
  requestId = 0,
  id = 0,
) {
  return create(Mesh.MeshPacketSchema, {
    from,
    to,
    id,
    channel: 0,
    hopStart: 3,
    hopLimit: 2,
    payloadVariant: { case: 'decoded', value: { portnum, payload, requestId } },
  });
}

/** A TRACEROUTE_APP reply from `from` to `to` answering `requestId`; SNRs in dB. */
export function tracerouteReply(
  from: number,
  to: number,
  requestId: number,
  route: { relays: number[]; towards: number[]; back?: number[]; snrBack?: number[] },
  id = 0,
): Mesh.MeshPacket {
  const discovery = create(Mesh.RouteDiscoverySchema, {
    route: route.relays,
    snrTowards: route.towards.map((s) => s * 4),
    routeBack: route.back ?? [],
    snrBack: (route.snrBack ?? []).map((s) => s * 4),
  });
  const payload = toBinary(Mesh.RouteDiscoverySchema, discovery);
  return decoded(from, to, Portnums.PortNum.TRACEROUTE_APP, payload, requestId, id);
}

export function neighbourInfo(
  from: number,
  neighbours: Array<{ nodeId: number; snr: number }>,
  id = 0,
): Mesh.MeshPacket {
  const info = create(Mesh.NeighborInfoSchema, { nodeId: from, neighbors: neighbours });
  return decoded(
    from,
    0xffffffff,
    Portnums.PortNum.NEIGHBORINFO_APP,
    toBinary(Mesh.NeighborInfoSchema, info),
    0,
    id,
  );
}
