import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { Mesh, Portnums, Telemetry } from '@meshtastic/protobufs';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeMeshPacket } from '../../src/mesh/packet-decoder.js';
import { BACKFILL_GRID_MS, backfillTimes } from '../../src/mesh/simulator/client-session.js';
import { createSimNetwork } from '../../src/mesh/simulator/nodes.js';
import {
  nodeInfoPacket,
  positionPacket,
  SPECIAL_NONCE_ONLY_NODES,
  telemetryPacket,
} from '../../src/mesh/simulator/packets.js';
import type { PacketResponder } from '../../src/mesh/simulator/responder.js';
import type { MeshSimulator, MeshSimulatorOptions } from '../../src/mesh/simulator/simulator.js';
import { diurnalShape, environmentAt, solarHour } from '../../src/mesh/simulator/weather-model.js';
import { testSimulator } from '../helpers/simulator.js';
import { RawClient, waitFor } from './helpers.js';

const CENTER = { latitude: 47.3769, longitude: 8.5417 };
// 2 min 30 s past a grid point: live packets (stamped "now") are never on the grid.
const NOW = Date.UTC(2025, 6, 1, 12, 0, 0) + 150_000;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function startSim(options: Partial<MeshSimulatorOptions> = {}): Promise<MeshSimulator> {
  const sim = testSimulator({
    seed: 7,
    telemetryIntervalMs: 300_000,
    now: () => NOW,
    ...options,
  });
  await sim.start();
  cleanups.push(() => sim.stop());
  return sim;
}

async function client(sim: MeshSimulator): Promise<RawClient> {
  const c = await RawClient.connect(sim.address!.port);
  cleanups.push(() => c.close());
  return c;
}

function telemetryOf(packet: Mesh.MeshPacket): Telemetry.Telemetry | undefined {
  if (packet.payloadVariant.case !== 'decoded') return undefined;
  if (packet.payloadVariant.value.portnum !== Portnums.PortNum.TELEMETRY_APP) return undefined;
  return fromBinary(Telemetry.TelemetrySchema, packet.payloadVariant.value.payload);
}

describe('simulated mesh', () => {
  it('is deterministic for a seed and differs between seeds', () => {
    const a = createSimNetwork({ seed: 7, nodeCount: 6, center: CENTER });
    const b = createSimNetwork({ seed: 7, nodeCount: 6, center: CENTER });
    const c = createSimNetwork({ seed: 8, nodeCount: 6, center: CENTER });
    expect(b).toEqual(a);
    expect(c.nodes.map((n) => n.num)).not.toEqual(a.nodes.map((n) => n.num));
    const node = a.nodes[0]!;
    const bytes = (net: typeof a) =>
      toBinary(
        Mesh.MeshPacketSchema,
        create(Mesh.MeshPacketSchema, telemetryPacket(net, net.nodes[0]!, 'environment', NOW)),
      );
    expect(bytes(b)).toEqual(bytes(a));
    expect(environmentAt(7, node, CENTER, NOW)).toEqual(environmentAt(7, node, CENTER, NOW));
    expect(environmentAt(7, node, CENTER, NOW)).not.toEqual(environmentAt(8, node, CENTER, NOW));
  });

  it('has distinct node numbers, six profiles, one node without a position, all within a few km', () => {
    const net = createSimNetwork({ seed: 3, nodeCount: 6, center: CENTER });
    const nums = new Set([net.radio.num, ...net.nodes.map((n) => n.num)]);
    expect(nums.size).toBe(7);
    expect(new Set(net.nodes.map((n) => n.profile.key)).size).toBe(6);
    expect(net.nodes.filter((n) => n.position === undefined)).toHaveLength(1);
    for (const n of net.nodes) {
      if (!n.position) continue;
      expect(Math.abs(n.position.latitude - CENTER.latitude)).toBeLessThan(0.05);
      expect(Math.abs(n.position.longitude - CENTER.longitude)).toBeLessThan(0.07);
    }
    const many = createSimNetwork({ seed: 3, nodeCount: 40, center: CENTER });
    expect(many.nodes.filter((n) => n.position === undefined)).toHaveLength(1);
    expect(new Set(many.nodes.map((n) => n.longName)).size).toBe(40);
  });

  it('keeps values realistic and the day cold at dawn, warm mid-afternoon (solar time)', () => {
    expect(diurnalShape(6)).toBeCloseTo(-1);
    expect(diurnalShape(15)).toBeCloseTo(1);
    const net = createSimNetwork({ seed: 11, nodeCount: 6, center: CENTER });
    const node = net.nodes[0]!;
    let dawn = 0;
    let afternoon = 0;
    const start = Date.UTC(2025, 3, 1);
    for (let t = start; t < start + 30 * 86_400_000; t += 1_200_000) {
      const v = environmentAt(11, node, CENTER, t);
      expect(v.temperature).toBeGreaterThan(-30);
      expect(v.temperature).toBeLessThan(45);
      expect(v.relativeHumidity).toBeGreaterThanOrEqual(12);
      expect(v.relativeHumidity).toBeLessThanOrEqual(100);
      expect(Math.abs(v.barometricPressure - 1013)).toBeLessThan(20);
      expect(v.windSpeed).toBeGreaterThanOrEqual(0);
      expect(v.windDirection).toBeGreaterThanOrEqual(0);
      expect(v.windDirection).toBeLessThan(360);
      expect(Number.isInteger(v.windDirection)).toBe(true);
      expect(v.gasResistance).toBeGreaterThan(5);
      const hour = solarHour(t, CENTER.longitude);
      if (hour >= 5 && hour < 7) dawn += v.temperature;
      if (hour >= 14 && hour < 16) afternoon += v.temperature;
    }
    expect(afternoon / 180 - dawn / 180).toBeGreaterThan(4);
  });

  it('gives every packet of a node and second its own id, the same on every replay', () => {
    const net = createSimNetwork({ seed: 7, nodeCount: 6, center: CENTER });
    const node = net.nodes.find((n) => n.profile.airQuality)!;
    const ids = (n: typeof net) => [
      telemetryPacket(n, node, 'environment', NOW)!.id,
      telemetryPacket(n, node, 'airQuality', NOW)!.id,
      telemetryPacket(n, node, 'device', NOW)!.id,
      positionPacket(n, node, NOW)?.id,
      nodeInfoPacket(n, node, NOW).id,
    ];
    const first = ids(net).filter((id) => id !== undefined);
    expect(new Set(first).size).toBe(first.length);
    expect(ids(createSimNetwork({ seed: 7, nodeCount: 6, center: CENTER }))).toEqual(ids(net));
  });

  it('computes backfill grid times aligned to the epoch', () => {
    const times = backfillTimes(NOW, 3_600_000);
    expect(times).toHaveLength(12);
    expect(times.every((t) => t % BACKFILL_GRID_MS === 0)).toBe(true);
    expect(times.at(-1)).toBe(NOW - 150_000);
    expect(backfillTimes(NOW - 150_000, 3_600_000)).toHaveLength(12);
  });
});

describe('MeshSimulator over TCP', () => {
  it('answers want_config_id like firmware: my_info first, node infos, config_complete_id last', async () => {
    const sim = await startSim();
    const c = await client(sim);
    const handshake = await c.handshake(1234);
    const net = sim.network!;
    expect(handshake[0]?.payloadVariant).toMatchObject({
      case: 'myInfo',
      value: { myNodeNum: net.radio.num },
    });
    expect(handshake.at(-1)?.payloadVariant).toEqual({ case: 'configCompleteId', value: 1234 });
    expect(handshake.some((m) => m.payloadVariant.case === 'metadata')).toBe(true);
    const infos = handshake.flatMap((m) =>
      m.payloadVariant.case === 'nodeInfo' ? [m.payloadVariant.value] : [],
    );
    expect(infos.map((i) => i.num).sort()).toEqual([net.radio.num, ...net.nodes.map((n) => n.num)].sort());
    const sensors = infos.filter((i) => i.num !== net.radio.num);
    expect(sensors.filter((i) => i.position === undefined)).toHaveLength(1);
    for (const info of sensors) {
      expect(info.user?.longName).toBeTruthy();
      expect(info.user?.hwModel).not.toBe(Mesh.HardwareModel.UNSET);
      expect(info.deviceMetrics?.batteryLevel).toBeDefined();
      expect(info.lastHeard).toBeGreaterThan(0);
    }
    // FromRadio.id counts up per session.
    const ids = handshake.map((m) => m.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    // Plain debug-log text between frames, as firmware writes on serial.
    await waitFor(() => c.logLines.some((l) => l.includes('[PhoneAPI]')), 'a debug log line');
  });

  it('answers the nodes-only nonce (69421) without my_info', async () => {
    const sim = await startSim();
    const handshake = await (await client(sim)).handshake(SPECIAL_NONCE_ONLY_NODES);
    expect(handshake.some((m) => m.payloadVariant.case === 'myInfo')).toBe(false);
    expect(handshake.filter((m) => m.payloadVariant.case === 'nodeInfo')).toHaveLength(7);
  });

  it('replays the history on the 5-minute grid, identically for a reconnecting client', async () => {
    const sim = await startSim({ backfillMs: 3_600_000 });
    const net = sim.network!;
    const streams =
      net.nodes.filter((n) => n.profile.environment.length > 0).length +
      net.nodes.filter((n) => n.profile.airQuality).length;
    // Every node's DEVICE_METRICS is replayed too (device health charts): no reading in them.
    const expected = 12 * (streams + net.nodes.length);
    const onGrid = (c: RawClient) => c.packets().filter((p) => (p.rxTime * 1000) % BACKFILL_GRID_MS === 0);

    const first = await client(sim);
    await first.handshake(1);
    const history = await waitFor(() => onGrid(first).length >= expected && onGrid(first), 'the backfill');
    expect(history).toHaveLength(expected);
    const times = [...new Set(history.map((p) => p.rxTime * 1000))].sort();
    expect(times).toEqual(backfillTimes(NOW, 3_600_000));
    // Each packet's reading decodes at the grid time (the hub dedupes on node + time).
    const readings = history.flatMap((p) => decodeMeshPacket(p, NOW).readings);
    expect(readings).toHaveLength(12 * streams);
    expect(readings.every((r) => r.timestamp % BACKFILL_GRID_MS === 0 && r.timestamp <= NOW)).toBe(true);

    await first.close();
    const second = await client(sim);
    await second.handshake(2);
    const replay = await waitFor(
      () => onGrid(second).length >= expected && onGrid(second),
      'the second backfill',
    );
    const encode = (ps: Mesh.MeshPacket[]) =>
      ps.map((p) => Buffer.from(toBinary(Mesh.MeshPacketSchema, p)).toString('hex'));
    expect(encode(replay)).toEqual(encode(history));
  });

  it('sends each profile its own fields: some nodes lack some metrics', async () => {
    const sim = await startSim({ backfillMs: BACKFILL_GRID_MS });
    const c = await client(sim);
    await c.handshake(3);
    const net = sim.network!;
    const expected = net.nodes.filter((n) => n.profile.environment.length > 0).length + 1;
    await waitFor(() => c.packets().length >= expected, 'one backfill round');
    const byNode = new Map<number, Telemetry.Telemetry[]>();
    for (const p of c.packets()) {
      const t = telemetryOf(p);
      if (t) byNode.set(p.from, [...(byNode.get(p.from) ?? []), t]);
    }
    const envOf = (key: string) => {
      const node = net.nodes.find((n) => n.profile.key === key)!;
      const t = byNode.get(node.num)?.find((x) => x.variant.case === 'environmentMetrics');
      return t?.variant.value as Telemetry.EnvironmentMetrics | undefined;
    };
    const station = envOf('weather-station')!;
    expect(station.windSpeed).toBeDefined();
    expect(station.windDirection).toBeDefined();
    expect(station.barometricPressure).toBeDefined();
    const th = envOf('temperature-humidity')!;
    expect(th.temperature).toBeDefined();
    expect(th.relativeHumidity).toBeDefined();
    expect(th.barometricPressure).toBeUndefined();
    expect(th.windSpeed).toBeUndefined();
    expect(envOf('bme680')?.gasResistance).toBeDefined();
    expect(envOf('anemometer')?.temperature).toBeUndefined();
    const aqNode = net.nodes.find((n) => n.profile.airQuality)!;
    const aq = byNode.get(aqNode.num)?.find((x) => x.variant.case === 'airQualityMetrics');
    expect(aq?.variant.value).toMatchObject({
      pm25Standard: expect.any(Number),
      pm100Standard: expect.any(Number),
    });
  });

  it('sends live environment telemetry within about 2 s of the handshake', async () => {
    const sim = await startSim({ now: Date.now });
    const c = await client(sim);
    await c.handshake(4);
    const envNodes = sim.network!.nodes.filter((n) => n.profile.environment.length > 0).length;
    await waitFor(
      () =>
        c.packets().filter((p) => telemetryOf(p)?.variant.case === 'environmentMetrics').length >= envNodes,
      'live telemetry from every node',
      3_000,
    );
  });

  it('reports a client packet in QueueStatus and hands it to the responder, whose reply reaches the client', async () => {
    const seen: Mesh.MeshPacket[] = [];
    const responder: PacketResponder = {
      onPacket(packet, simClient) {
        seen.push(packet);
        const node = simClient.network.nodes[0]!;
        simClient.after(5, () =>
          simClient.deliver({
            ...packet,
            from: node.num,
            to: packet.from,
            id: 0,
            rxTime: 0,
            payloadVariant: {
              case: 'decoded',
              value: { ...(packet.payloadVariant.value as Mesh.Data), requestId: packet.id },
            },
          } as Mesh.MeshPacket),
        );
      },
    };
    const sim = await startSim({ responder });
    const c = await client(sim);
    await c.handshake(5);
    c.send({
      payloadVariant: {
        case: 'packet',
        value: {
          to: sim.network!.nodes[0]!.num,
          id: 99,
          wantAck: true,
          payloadVariant: {
            case: 'decoded',
            value: { portnum: Portnums.PortNum.TEXT_MESSAGE_APP, payload: new TextEncoder().encode('hi') },
          },
        },
      },
    });
    const status = await waitFor(
      () => c.messages.find((m) => m.payloadVariant.case === 'queueStatus'),
      'QueueStatus',
    );
    expect(status.payloadVariant.value).toMatchObject({ meshPacketId: 99, res: 0 });
    await waitFor(() => seen.length === 1, 'the responder');
    expect(seen[0]?.from).toBe(sim.network!.radio.num);
    const reply = await waitFor(
      () =>
        c
          .packets()
          .find((p) => p.payloadVariant.case === 'decoded' && p.payloadVariant.value.requestId === 99),
      'the reply',
    );
    expect(reply.from).toBe(sim.network!.nodes[0]!.num);
    expect(reply.rxTime).toBe(Math.floor(NOW / 1000));
    expect(reply.id).not.toBe(0);
  });

  it('serves several clients at once and closes them all on stop()', async () => {
    const sim = await startSim();
    const a = await client(sim);
    const b = await client(sim);
    await Promise.all([a.handshake(10), b.handshake(11)]);
    expect(sim.clientCount).toBe(2);
    await sim.stop();
    await waitFor(() => a.closed && b.closed, 'clients closed');
    expect(sim.clientCount).toBe(0);
    expect(sim.address).toBeUndefined();
  });

  it('ignores malformed ToRadio frames and heartbeats', async () => {
    const sim = await startSim();
    const c = await client(sim);
    c.socket.write(Uint8Array.of(0x94, 0xc3, 0x00, 0x02, 0xff, 0xff));
    c.send({ payloadVariant: { case: 'heartbeat', value: {} } });
    const handshake = await c.handshake(12);
    expect(handshake.at(-1)?.payloadVariant).toEqual({ case: 'configCompleteId', value: 12 });
  });
});
