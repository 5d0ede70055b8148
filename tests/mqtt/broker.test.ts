/**
 * The broker core on a loopback port with a real MQTT client, and a reading sink the test
 * controls: the QoS 1 PUBACK waits for the commit, a failed commit drops the connection without
 * PUBACK, and the resource limits (packet size, connections, drain timeout) hold.
 */
import { connect as netConnect, type Socket } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { HubBus } from '../../src/domain/events.js';
import type { Reading } from '../../src/domain/reading.js';
import type { ReadingSink } from '../../src/ingest/reading-sink.js';
import { Bus } from '../../src/kernel/bus.js';
import { ChannelKeyring } from '../../src/mesh/mqtt/channel-keys.js';
import { MeshUplinkDecoder } from '../../src/mesh/mqtt/uplink.js';
import { PacketDedupe } from '../../src/mesh/packet-dedupe.js';
import { MeshFanOut } from '../../src/mesh/packet-fanout.js';
import { MqttAuthenticator } from '../../src/mqtt/authenticator.js';
import { MqttBroker } from '../../src/mqtt/broker.js';
import { MqttIngest } from '../../src/mqtt/ingest-router.js';
import { DEFAULT_RETAINED_LIMITS, RetainedLedger } from '../../src/mqtt/retained.js';
import { waitFor } from '../helpers/hub.js';
import { connect, endClients, refusedCode } from './helpers.js';

interface HeldCommit {
  readings: Reading[];
  resolve(): void;
  reject(error: Error): void;
}

/** A sink whose commits the test releases by hand. */
function heldSink(): ReadingSink & { held: HeldCommit[] } {
  const held: HeldCommit[] = [];
  return {
    held,
    submit(readings) {
      if (readings.length === 0) return Promise.resolve();
      return new Promise<void>((resolve, reject) => held.push({ readings, resolve, reject }));
    },
  };
}

/** A sink where every submission shares one commit, as submissions of one turn do in reading-sink.ts. */
function sharedSink(): ReadingSink & { submitted: number; commit: HeldCommit | undefined } {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const committed = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  const sink = {
    submitted: 0,
    commit: undefined as HeldCommit | undefined,
    submit(readings: Reading[]) {
      sink.submitted++;
      sink.commit ??= { readings, resolve, reject };
      return committed;
    },
  };
  return sink;
}

const brokers: MqttBroker[] = [];
afterEach(async () => {
  await endClients();
  await Promise.all(brokers.splice(0).map((b) => b.close()));
});

async function startBroker<S extends ReadingSink = ReturnType<typeof heldSink>>(
  options: { maxConnections?: number; maxPacketBytes?: number; drainTimeoutMs?: number; sink?: S } = {},
) {
  const sink = (options.sink ?? heldSink()) as S;
  const log = pino({ level: 'silent' });
  const bus: HubBus = new Bus();
  const ingest = new MqttIngest({
    sink,
    decoder: new MeshUplinkDecoder({ keys: ChannelKeyring.fromConfig() }),
    fanOut: new MeshFanOut({ bus, dedupe: new PacketDedupe() }),
    log,
  });
  const broker = new MqttBroker({
    authenticator: new MqttAuthenticator({ allowAnonymous: true }),
    ingest,
    retained: new RetainedLedger(DEFAULT_RETAINED_LIMITS),
    log,
    maxConnections: options.maxConnections ?? 100,
    maxPacketBytes: options.maxPacketBytes ?? 65_536,
    drainTimeoutMs: options.drainTimeoutMs ?? 30_000,
    websocket: false,
  });
  brokers.push(broker);
  await broker.open();
  const { port } = await broker.listen('127.0.0.1', 0);
  return { broker, sink, url: `mqtt://127.0.0.1:${port}` };
}

const reading = (t: number) => JSON.stringify({ node_id: 'garden', temperature_c: 20 + t });

/** A full request/response on another connection: whatever the broker wrote before it has arrived. */
async function roundTrip(url: string): Promise<void> {
  const other = await connect(url);
  await other.subscribeAsync('msh/roundtrip');
}

describe('PUBACK after commit', () => {
  it('holds the QoS 1 PUBACK until the readings are committed', async () => {
    const { sink, url } = await startBroker();
    const client = await connect(url);
    let acked = false;
    const published = client.publishAsync('meshhub/ingest/readings', reading(1), { qos: 1 }).then(() => {
      acked = true;
    });
    await waitFor(() => sink.held.length === 1, 5_000, 'the readings to reach the sink');
    expect(sink.held[0]!.readings).toMatchObject([{ nodeId: 'garden', temperatureC: 21 }]);
    await roundTrip(url);
    expect(acked).toBe(false);
    sink.held[0]!.resolve();
    await published;
    expect(acked).toBe(true);
  });

  it('drops the connection without a PUBACK when the commit fails, so the client sends again', async () => {
    const { sink, url } = await startBroker();
    const client = await connect(url);
    let acked = false;
    client.publishAsync('meshhub/ingest/readings', reading(2), { qos: 1 }).then(
      () => {
        acked = true;
      },
      () => {},
    );
    await waitFor(() => sink.held.length === 1, 5_000, 'the readings to reach the sink');
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    sink.held[0]!.reject(new Error('disk full'));
    await closed;
    expect(acked).toBe(false);
  });

  it('releases every PUBACK held on a shared commit together, or none of them when it fails', async () => {
    for (const outcome of ['committed', 'failed'] as const) {
      const { sink, url } = await startBroker({ sink: sharedSink() });
      const clients = [await connect(url), await connect(url)];
      const acks = clients.map((c, i) =>
        c.publishAsync('meshhub/ingest/readings', reading(10 + i), { qos: 1 }).then(
          () => 'acked',
          () => 'not acked',
        ),
      );
      await waitFor(() => sink.submitted === 2, 5_000, 'both publishes to reach the sink');
      if (outcome === 'committed') {
        sink.commit!.resolve();
        expect(await Promise.all(acks)).toEqual(['acked', 'acked']);
      } else {
        const closed = clients.map((c) => new Promise<void>((resolve) => c.once('close', () => resolve())));
        sink.commit!.reject(new Error('disk full'));
        await Promise.all(closed);
        let acked = 0;
        for (const ack of acks) void ack.then((a) => a === 'acked' && acked++);
        await roundTrip(url);
        expect(acked).toBe(0);
      }
    }
  });

  it('does not hold QoS 0 publishes (there is no acknowledgement to hold)', async () => {
    const { sink, url } = await startBroker();
    const client = await connect(url);
    await client.publishAsync('meshhub/ingest/readings', reading(3), { qos: 0 });
    await waitFor(() => sink.held.length === 1, 5_000, 'the readings to reach the sink');
    // The connection is not stalled: a QoS 1 publish of garbage (nothing to commit) is acknowledged.
    await client.publishAsync('meshhub/ingest/readings', 'not json', { qos: 1 });
  });

  it('acknowledges a publish that carries nothing to store at once', async () => {
    const { sink, url } = await startBroker();
    const client = await connect(url);
    await client.publishAsync(
      'meshhub/ingest/readings',
      JSON.stringify({ node_id: 'x', temperature_c: 'warm' }),
      {
        qos: 1,
      },
    );
    expect(sink.held).toHaveLength(0);
  });
});

describe('limits', () => {
  it('disconnects a client announcing a packet over the size limit, before buffering it', async () => {
    const { broker, url } = await startBroker({ maxPacketBytes: 4_096 });
    // A raw socket announces a 100 MB PUBLISH: the broker must hang up without waiting for the body.
    const socket: Socket = netConnect(broker.address()!.port, '127.0.0.1');
    await new Promise<void>((r) => socket.once('connect', () => r()));
    const connectPacket = Buffer.from([
      0x10, 0x0c, 0x00, 0x04, 0x4d, 0x51, 0x54, 0x54, 0x04, 0x02, 0x00, 0x3c, 0x00, 0x00,
    ]);
    socket.write(connectPacket);
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.on('error', () => {});
    // PUBLISH, remaining length 100 000 000 as a 4-byte varint.
    socket.write(Buffer.from([0x30, 0x80, 0xc2, 0xd7, 0x2f]));
    socket.write(Buffer.alloc(1024));
    await closed;
    // Others are unaffected, and a packet under the limit still goes through.
    const client = await connect(url);
    await client.publishAsync('msh/EU_868/2/map/', Buffer.alloc(2_000), { qos: 1 });
  });

  it('refuses connections past the limit with CONNACK 3 (server unavailable)', async () => {
    const { url } = await startBroker({ maxConnections: 2 });
    await connect(url);
    await connect(url);
    expect(await refusedCode(url)).toBe(3);
  });

  it('disconnects a subscriber that stops reading, after the drain timeout', async () => {
    const { broker } = await startBroker({ drainTimeoutMs: 1_000 });
    const socket: Socket = netConnect(broker.address()!.port, '127.0.0.1');
    socket.on('error', () => {});
    await new Promise<void>((r) => socket.once('connect', () => r()));
    // CONNECT (clean, keepalive 0), then SUBSCRIBE msh/# QoS 0, then stop reading.
    socket.write(
      Buffer.from([0x10, 0x0c, 0x00, 0x04, 0x4d, 0x51, 0x54, 0x54, 0x04, 0x02, 0x00, 0x00, 0x00, 0x00]),
    );
    socket.write(Buffer.from([0x82, 0x0a, 0x00, 0x01, 0x00, 0x05, 0x6d, 0x73, 0x68, 0x2f, 0x23, 0x00]));
    await new Promise<void>((r) => socket.once('data', () => r()));
    socket.pause();
    expect(broker.connectedClients).toBe(1);
    const gone = new Promise<void>((r) => broker.aedes.once('clientDisconnect', () => r()));
    let disconnected = false;
    void gone.then(() => {
      disconnected = true;
    });
    const chunk = Buffer.alloc(60_000, 1);
    // Fill the socket buffers until the broker gives up on the stuck subscriber.
    while (!disconnected) {
      broker.aedes.publish(
        { cmd: 'publish', topic: 'msh/flood', payload: chunk, qos: 0, retain: false, dup: false },
        () => {},
      );
      await new Promise((r) => setTimeout(r, 5));
    }
    await gone;
    expect(broker.connectedClients).toBe(0);
    socket.destroy();
  });
});
