/**
 * SIM_AWAY_MINUTES: the wandering simulated node stays and is away for that many minutes at a
 * time, so the held-text demo (docs/held-texts.md) plays in minutes. While it is away a text to
 * it gets MAX_RETRANSMIT; when it comes back it announces itself (nodeinfo) at once and texts
 * reach it again.
 */
import { fromBinary } from '@bufbuild/protobuf';
import { Mesh, Portnums } from '@meshtastic/protobufs';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../hub/settings.js';
import { createMessagingResponder, messagingRoles } from '../../src/mesh/simulator/messaging-responder.js';
import { createSimNetwork } from '../../src/mesh/simulator/nodes.js';
import { comeAndGo } from '../../src/mesh/simulator/presence.js';
import { simulatorOptionsFrom } from '../../src/mesh/simulator/simulator-actor.js';
import { TEST_MESH_CENTER, testSimulator } from '../helpers/simulator.js';
import { RawClient, waitFor } from './helpers.js';

const MINUTE = 60_000;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function wanderersOf(schedule: ReturnType<typeof comeAndGo>, nums: number[], from: number) {
  return nums.filter((num) => schedule.awayWindows(num, from, from + 24 * 60 * MINUTE).length > 0);
}

describe('SIM_AWAY_MINUTES', () => {
  it('makes every stay and absence of the wanderer that long; unset keeps the seeded 10–60 min', () => {
    const network = createSimNetwork({ seed: 1, nodeCount: 6, center: TEST_MESH_CENTER });
    const outOfRange = messagingRoles(network).outOfRange!.num;
    const nums = network.nodes.map((n) => n.num);
    const short = comeAndGo(network, 0, [outOfRange], 2);
    const [wanderer] = wanderersOf(short, nums, 0);
    expect(wanderer).toBeDefined();
    expect(wanderer).not.toBe(outOfRange);
    expect(short.awayWindows(wanderer!, 0, 9 * MINUTE)).toEqual([
      { from: 2 * MINUTE, until: 4 * MINUTE },
      { from: 6 * MINUTE, until: 8 * MINUTE },
    ]);
    // The same node wanders without the setting, only for longer.
    const usual = comeAndGo(network, 0, [outOfRange]);
    expect(wanderersOf(usual, nums, 0)).toEqual([wanderer]);
    const [first] = usual.awayWindows(wanderer!, 0, 24 * 60 * MINUTE);
    expect(first!.from).toBeGreaterThanOrEqual(10 * MINUTE);
    expect(first!.until - first!.from).toBeGreaterThanOrEqual(30 * MINUTE);
  });

  it('is read from the settings, and a bad value names the setting', () => {
    expect(simulatorOptionsFrom(loadConfig({ SIM_AWAY_MINUTES: '2' })).awayMinutes).toBe(2);
    expect(simulatorOptionsFrom(loadConfig({})).awayMinutes).toBeUndefined();
    expect(() => loadConfig({ SIM_AWAY_MINUTES: 'soon' })).toThrow(/SIM_AWAY_MINUTES/);
    expect(() => loadConfig({ SIM_AWAY_MINUTES: '0' })).toThrow(/SIM_AWAY_MINUTES/);
  });

  it('over TCP: a text to the away node gets MAX_RETRANSMIT; back, it sends its nodeinfo and texts reach it', async () => {
    // 0.1 min: there for 6 s, away for 6 s, back for 6 s.
    const sim = testSimulator({
      seed: 1,
      telemetryIntervalMs: 3_600_000,
      awayMinutes: 0.1,
      responder: createMessagingResponder({ failurePercent: 0, delayScale: 0.01 }),
    });
    await sim.start();
    cleanups.push(() => sim.stop());
    const network = sim.network!;
    const nums = network.nodes.map((n) => n.num);
    const [wanderer] = wanderersOf(
      network.presence as ReturnType<typeof comeAndGo>,
      nums,
      Date.now() - MINUTE,
    );
    const [away] = network.presence!.awayWindows(wanderer!, Date.now(), Date.now() + MINUTE);
    const c = await RawClient.connect(sim.address!.port);
    cleanups.push(() => c.close());
    await c.handshake(11);

    const text = (id: number) =>
      c.send({
        payloadVariant: {
          case: 'packet',
          value: {
            to: wanderer!,
            id,
            wantAck: true,
            payloadVariant: {
              case: 'decoded',
              value: { portnum: Portnums.PortNum.TEXT_MESSAGE_APP, payload: new TextEncoder().encode('hi') },
            },
          },
        },
      });
    const routingFor = (id: number) =>
      c.packets().flatMap((p) => {
        if (p.payloadVariant.case !== 'decoded') return [];
        const data = p.payloadVariant.value;
        if (data.portnum !== Portnums.PortNum.ROUTING_APP || data.requestId !== id) return [];
        const routing = fromBinary(Mesh.RoutingSchema, data.payload);
        return routing.variant.case === 'errorReason' ? [routing.variant.value] : [];
      });

    await waitFor(() => Date.now() >= away!.from + 200, 'the wanderer to leave', 10_000);
    text(1001);
    const whileAway = await waitFor(() => routingFor(1001)[0], 'the routing answer while away', 10_000);
    expect(whileAway).toBe(Mesh.Routing_Error.MAX_RETRANSMIT);

    await waitFor(() => Date.now() >= away!.until, 'the wanderer to come back', 10_000);
    const heardBefore = c.packets().length;
    await waitFor(
      () =>
        c
          .packets()
          .slice(heardBefore)
          .some(
            (p) =>
              p.from === wanderer &&
              p.payloadVariant.case === 'decoded' &&
              p.payloadVariant.value.portnum === Portnums.PortNum.NODEINFO_APP,
          ),
      'the nodeinfo of the returning node',
      10_000,
    );
    text(1002);
    await waitFor(() => routingFor(1002).includes(Mesh.Routing_Error.NONE), 'the acknowledgement', 10_000);
  }, 40_000);
});
