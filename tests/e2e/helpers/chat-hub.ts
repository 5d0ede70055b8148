/**
 * A hub for the chat tests, on the real simulator over TCP whose simulated people answer as
 * they do in the demo, except that the test decides when their replies go out (held by
 * ReplyGate), so a reply can arrive while the user looks at another page.
 */
import { type Mesh, Portnums } from '@meshtastic/protobufs';
import { HubUserService } from '../../../src/auth/user-service.js';
import { createMessagingResponder, messagingRoles } from '../../../src/mesh/simulator/messaging-responder.js';
import { createSimNetwork, type SimNode } from '../../../src/mesh/simulator/nodes.js';
import type { PacketResponder, SimClient } from '../../../src/mesh/simulator/responder.js';
import { SubscriptionRepository } from '../../../src/messaging/subscription-repository.js';
import { startTestHub, type TestHub, waitFor } from '../../helpers/hub.js';
import { testSimulator } from '../../helpers/simulator.js';
import { localTiles, SIM_CENTER } from './hubs.js';

export const PASSWORD = 'field-radio-42';
const SEED = 7;

function isText(packet: Mesh.MeshPacket): boolean {
  return (
    packet.payloadVariant.case === 'decoded' &&
    packet.payloadVariant.value.portnum === Portnums.PortNum.TEXT_MESSAGE_APP
  );
}

/** Passes acknowledgements through at once and holds text replies until `release()`. */
export class ReplyGate implements PacketResponder {
  private readonly held: Array<() => void> = [];
  constructor(private readonly inner: PacketResponder) {}

  onPacket(packet: Mesh.MeshPacket, client: SimClient) {
    const gated: SimClient = {
      network: client.network,
      log: client.log,
      now: () => client.now(),
      after: (ms, fn) => client.after(ms, fn),
      deliver: (p) => {
        if (isText(p)) this.held.push(() => client.deliver(p));
        else client.deliver(p);
      },
    };
    return this.inner.onPacket(packet, gated);
  }

  get waiting(): number {
    return this.held.length;
  }

  release(): void {
    for (const deliver of this.held.splice(0)) deliver();
  }
}

export interface ChatHub {
  hub: TestHub;
  gate: ReplyGate;
  /** A node whose person answers delivered texts. */
  replier: SimNode;
  /** The node no text ever reaches. */
  outOfRange: SimNode;
  /** Any other reachable node. */
  other: SimNode;
  addUser(username: string, nodes: 'all' | string[]): Promise<void>;
  stop(): Promise<void>;
}

export async function startChatHub(env: Record<string, string> = {}): Promise<ChatHub> {
  const network = createSimNetwork({ seed: SEED, nodeCount: 6, center: SIM_CENTER });
  const roles = messagingRoles(network);
  const gate = new ReplyGate(createMessagingResponder({ failurePercent: 0, delayScale: 0.2 }));
  const sim = testSimulator({
    seed: SEED,
    telemetryIntervalMs: 3_600_000,
    responder: gate,
  });
  const { port } = await sim.start();
  const hub = await startTestHub({
    RADIO: `tcp:127.0.0.1:${port}`,
    MAP_TILES: localTiles(),
    MESSAGE_AIRTIME_PERCENT: '100',
    MESSAGE_RETRY_DELAY: '0s',
    MESSAGE_MAX_RETRIES: '0',
    MESSAGE_ACK_TIMEOUT: '20s',
    // Texts wait an hour for a node out of range (docs/held-texts.md); `hold_hours: 0` in a POST
    // makes one fail after the retries instead.
    MESSAGE_HOLD_HOURS: '1',
    MESSAGE_RATE_PER_NODE: '1000/1m',
    ...env,
  });
  // The hub learns the nodes from the radio's NodeDB at connect.
  await waitFor(async () => {
    const res = await fetch(`${hub.baseUrl}/api/v1/nodes`);
    const { data } = (await res.json()) as { data: Array<{ node_id: string; long_name?: string }> };
    return (
      data.length >= 7 &&
      data.every((n) => n.long_name) &&
      hub.hub.bus.last('radio.status')!.myNodeNum !== undefined
    );
  });
  const replier = roles.repliers[0]!;
  const outOfRange = roles.outOfRange!;
  const other = network.nodes.find((n) => n !== replier && n !== outOfRange && !roles.repliers.includes(n))!;
  return {
    hub,
    gate,
    replier,
    outOfRange,
    other,
    async addUser(username, nodes) {
      const db = hub.hub.store.db;
      await new HubUserService(db).add({ username, password: PASSWORD, roles: ['subscriber'] });
      new SubscriptionRepository(db).create({ subscriber: username, nodes, source: 'test' });
    },
    async stop() {
      await hub.stop();
      await sim.stop();
    },
  };
}
