/**
 * The regional feed generator (scripts/bench/lib/regional-feed.ts) speaks what the hub reads: its
 * encrypted ServiceEnvelopes decode through the uplink decoder into the node's names, position,
 * battery and environment readings, every gateway's copy carries the same packet, and the
 * schedule keeps the firmware intervals.
 */
import { describe, expect, it } from 'vitest';
import { RegionalFeed } from '../../scripts/bench/lib/regional-feed.js';
import { ChannelKeyring } from '../../src/mesh/mqtt/channel-keys.js';
import { MeshUplinkDecoder } from '../../src/mesh/mqtt/uplink.js';

const NOW = Date.UTC(2026, 10, 29, 10, 0, 0);
const decoder = new MeshUplinkDecoder({ keys: ChannelKeyring.fromConfig() });

function decodeAll(packet: ReturnType<RegionalFeed['packet']>) {
  return packet.copies.map((c) => {
    const result = decoder.decode(c.topic, c.payload, NOW);
    if (result.kind !== 'packet') throw new Error(`${result.kind}: ${JSON.stringify(result)}`);
    return result;
  });
}

describe('RegionalFeed', () => {
  const feed = new RegionalFeed({ nodes: 200, gateways: 10, seed: 7 });

  it('is deterministic for a seed and gives every node its own number', () => {
    const again = new RegionalFeed({ nodes: 200, gateways: 10, seed: 7 });
    expect(again.nodes.map((n) => n.id)).toEqual(feed.nodes.map((n) => n.id));
    expect(new Set(feed.nodes.map((n) => n.num)).size).toBe(200);
    expect(again.packet(again.nodes[3]!, 'position').copies[0]!.payload).toEqual(
      new RegionalFeed({ nodes: 200, gateways: 10, seed: 7 }).packet(again.nodes[3]!, 'position').copies[0]!
        .payload,
    );
  });

  it("decodes into the node's names, position, battery and environment reading", () => {
    const node = feed.nodes.find((n) => n.hasEnvironment)!;
    const [info] = decodeAll(feed.packet(node, 'nodeinfo'));
    expect(info!.nodes[0]).toMatchObject({
      nodeId: node.id,
      longName: node.longName,
      shortName: node.shortName,
    });
    expect(info!.nodes[0]!.publicKey).toEqual(node.publicKey);

    const [position] = decodeAll(feed.packet(node, 'position'));
    expect(position!.nodes[0]).toMatchObject({
      nodeId: node.id,
      latitude: node.latitudeI / 1e7,
      longitude: node.longitudeI / 1e7,
      altitude: node.altitude,
    });

    const [device] = decodeAll(feed.packet(node, 'device'));
    expect(device!.nodes[0]!.batteryLevel).toBeGreaterThanOrEqual(20);
    expect(device!.readings).toEqual([]);

    const [environment] = decodeAll(feed.packet(node, 'environment', 0, NOW / 1000 - 5));
    expect(environment!.readings).toHaveLength(1);
    expect(environment!.readings[0]).toMatchObject({ nodeId: node.id, timestamp: NOW - 5000 });
    expect(environment!.readings[0]!.temperatureC).toBeTypeOf('number');
    expect(environment!.readings[0]!.pressurePa).toBeGreaterThan(90_000);
  });

  it('sends each packet through 1–3 gateways with the same (from, id)', () => {
    const copies = feed.nodes.map((n) => feed.packet(n, 'device').copies.length);
    expect(Math.min(...copies)).toBeGreaterThanOrEqual(1);
    expect(Math.max(...copies)).toBe(3);
    const node = feed.nodes.find((n) => n.heardBy.length === 3)!;
    const packet = feed.packet(node, 'device');
    const decoded = decodeAll(packet);
    expect(new Set(decoded.map((d) => `${d.from}:${d.id}`))).toEqual(new Set([`${node.num}:${packet.id}`]));
    expect(new Set(decoded.map((d) => d.gatewayId)).size).toBe(3);
    expect(packet.copies[0]!.topic).toMatch(/^msh\/EU_868\/2\/e\/LongFast\/![0-9a-f]{8}$/);
  });

  it('schedules the firmware intervals: about 19 packets/s for 10,000 nodes, in time order', () => {
    const big = new RegionalFeed({ nodes: 10_000 });
    // nodeinfo 3 h, position 15 min, device 30 min, environment 30 min from 30%.
    expect(big.packetRate()).toBeGreaterThan(18.5);
    expect(big.packetRate()).toBeLessThan(20.2);
    const window = [...feed.schedule(0, 1_800)];
    const per = (kind: string) => window.filter((p) => p.kind === kind).length;
    expect(per('position')).toBe(400);
    expect(per('device')).toBe(200);
    expect(per('environment')).toBe(feed.nodes.filter((n) => n.hasEnvironment).length);
    expect(window.map((p) => p.at)).toEqual([...window.map((p) => p.at)].sort((a, b) => a - b));
    expect(Math.max(...window.map((p) => p.at))).toBeLessThan(1_800);
  });
});
