import type { Duplex } from 'node:stream';
import { create } from '@bufbuild/protobuf';
import { Mesh, Portnums } from '@meshtastic/protobufs';
import { afterEach, describe, expect, it } from 'vitest';
import type { RadioStatus } from '../../src/domain/radio.js';
import { TransportClosedError } from '../../src/mesh/errors.js';
import { decodeMeshPacket } from '../../src/mesh/packet-decoder.js';
import { RadioLink, type RadioLinkOptions } from '../../src/mesh/radio-link.js';
import type { PacketResponder } from '../../src/mesh/simulator/responder.js';
import type { MeshSimulator } from '../../src/mesh/simulator/simulator.js';
import { type RadioTransport, tcpTransport } from '../../src/mesh/transport.js';
import { testSimulator } from '../helpers/simulator.js';
import { RadioProxy } from '../reliability/helpers/radio-proxy.js';
import { frameFromRadio, silentLog, startDevice, startServer, trackTimers, waitFor } from './helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function simulator(port = 0, responder?: PacketResponder): MeshSimulator {
  const sim = testSimulator({
    port,
    seed: 5,
    telemetryIntervalMs: 300_000,
    backfillMs: 3_600_000,
    ...(responder ? { responder } : {}),
  });
  cleanups.push(() => sim.stop());
  return sim;
}

interface Recorder {
  link: RadioLink;
  statuses: RadioStatus[];
  messages: Mesh.FromRadio[];
  logLines: string[];
  frameErrors: string[];
}

/** A link to the radio on `port`, started and connected. */
async function connectedLink(port: number, options: Partial<RadioLinkOptions> = {}): Promise<Recorder> {
  const r = link(port, options);
  r.link.start();
  await waitFor(() => r.link.status.state === 'connected', 'connected');
  return r;
}

function link(port: number, options: Partial<RadioLinkOptions> = {}): Recorder {
  const rec: Omit<Recorder, 'link'> = { statuses: [], messages: [], logLines: [], frameErrors: [] };
  const radio = new RadioLink({
    transport: tcpTransport('127.0.0.1', port, { connectTimeoutMs: 1_000 }),
    log: silentLog,
    heartbeatMs: 60_000,
    handshakeTimeoutMs: 2_000,
    reconnect: { initialMs: 20, maxMs: 100 },
    simulated: true,
    onStatus: (s) => rec.statuses.push(s),
    onFromRadio: (m) => rec.messages.push(m),
    onLogLine: (l) => rec.logLines.push(l),
    onFrameError: (kind, detail) => rec.frameErrors.push(`${kind}: ${detail}`),
    ...options,
  });
  cleanups.push(() => radio.stop());
  return { ...rec, link: radio };
}

/** The state sequence, without the repeats of status updates within one state (e.g. my_node_num learnt). */
const states = (r: Recorder) =>
  r.statuses.map((s) => s.state).filter((s, i, all) => i === 0 || all[i - 1] !== s);

describe('RadioLink against the simulator', () => {
  it('connects, learns my_node_num, receives node infos and telemetry that decodes into readings', async () => {
    const sim = simulator();
    const { port } = await sim.start();
    const r = await connectedLink(port);
    const net = sim.network!;
    expect(states(r).slice(0, 3)).toEqual(['connecting', 'configuring', 'connected']);
    expect(r.link.myNodeNum).toBe(net.radio.num);
    expect(r.link.status).toMatchObject({
      state: 'connected',
      transport: 'tcp',
      address: `127.0.0.1:${port}`,
      simulated: true,
      myNodeNum: net.radio.num,
    });
    const infos = r.messages.filter((m) => m.payloadVariant.case === 'nodeInfo');
    expect(infos).toHaveLength(net.nodes.length + 1);
    await waitFor(
      () => r.messages.filter((m) => m.payloadVariant.case === 'packet').length >= 12,
      'telemetry',
    );
    const readings = r.messages
      .flatMap((m) => (m.payloadVariant.case === 'packet' ? [m.payloadVariant.value] : []))
      .flatMap((p) => decodeMeshPacket(p, Date.now()).readings);
    expect(readings.length).toBeGreaterThanOrEqual(12);
    expect(readings.some((x) => x.temperatureC !== undefined)).toBe(true);
    expect(r.frameErrors).toEqual([]);
    await waitFor(() => r.logLines.length > 0, 'a device log line');
  });

  it('reconnects after the simulator goes away and comes back on the same port', async () => {
    const first = simulator();
    const { port } = await first.start();
    const r = await connectedLink(port);
    await first.stop();
    await waitFor(() => r.link.status.state !== 'connected', 'disconnected');
    expect(r.link.status.lastError).toBeDefined();
    // A few refused attempts while nothing listens.
    const down = r.statuses.length;
    await waitFor(
      () => r.statuses.slice(down).filter((s) => s.state === 'connecting').length >= 2,
      'two refused attempts',
    );
    const second = simulator(port);
    await second.start();
    await waitFor(() => r.link.status.state === 'connected', 'connected again');
    expect(states(r).filter((s) => s === 'connected')).toHaveLength(2);
    expect(r.link.status.lastError).toBeUndefined();
  });

  it('sends ToRadio packets once connected and refuses them before', async () => {
    const received: Mesh.MeshPacket[] = [];
    const sim = simulator(0, { onPacket: (p) => void received.push(p) });
    const { port } = await sim.start();
    const r = link(port);
    const packet = create(Mesh.ToRadioSchema, {
      payloadVariant: {
        case: 'packet',
        value: {
          to: 0xffffffff,
          id: 4242,
          payloadVariant: {
            case: 'decoded',
            value: {
              portnum: Portnums.PortNum.TEXT_MESSAGE_APP,
              payload: new TextEncoder().encode('hello mesh'),
            },
          },
        },
      },
    });
    await expect(r.link.send(packet)).rejects.toBeInstanceOf(TransportClosedError);
    r.link.start();
    await waitFor(() => r.link.status.state === 'connected', 'connected');
    await r.link.send(packet);
    await waitFor(() => received.length === 1, 'the packet at the simulator');
    expect(received[0]?.id).toBe(4242);
  });
});

describe('RadioLink and a radio that goes quiet without closing', () => {
  it('says when the radio answers again after leaving a packet unanswered for over 2 s, and not for a prompt answer', async () => {
    const sim = simulator();
    const { port } = await sim.start();
    const proxy = new RadioProxy(port);
    const proxyPort = await proxy.start();
    cleanups.push(() => proxy.stop());
    const quiet: number[] = [];
    const r = await connectedLink(proxyPort, { onQuietEnded: (since) => quiet.push(since) });
    const text = (id: number) =>
      create(Mesh.ToRadioSchema, {
        payloadVariant: {
          case: 'packet',
          value: {
            to: 0xffffffff,
            id,
            payloadVariant: {
              case: 'decoded',
              value: { portnum: Portnums.PortNum.TEXT_MESSAGE_APP, payload: new TextEncoder().encode('hi') },
            },
          },
        },
      });
    await r.link.send(text(1));
    await new Promise((done) => setTimeout(done, 300));
    expect(quiet).toEqual([]);

    proxy.stall();
    const sentAt = Date.now();
    await r.link.send(text(2));
    await new Promise((done) => setTimeout(done, 2_500));
    expect(quiet).toEqual([]);
    await proxy.restore();
    await waitFor(() => quiet.length === 1, 'the quiet noticed when the radio answers');
    expect(quiet[0]).toBeGreaterThanOrEqual(sentAt - 5);
    expect(quiet[0]).toBeLessThan(sentAt + 200);
    // The link was never dropped (a stall under 8 s).
    expect(r.link.status.state).toBe('connected');
  });
});

describe('RadioLink against misbehaving devices', () => {
  it('times out a silent device and retries', async () => {
    const server = await startServer(() => {});
    cleanups.push(() => server.close());
    const r = link(server.port, { handshakeTimeoutMs: 100 });
    r.link.start();
    await waitFor(() => server.sockets.length >= 2, 'a second attempt');
    expect(states(r)).not.toContain('connected');
    expect(states(r)).toContain('configuring');
    expect(r.link.status.lastError).toBe('no config_complete_id within 100 ms');
  });

  it('survives garbage, corrupt frames and malformed protobufs, then completes the handshake', async () => {
    const server = await startDevice((toRadio, socket) => {
      if (toRadio.payloadVariant.case !== 'wantConfigId') return;
      socket.write(Buffer.from([0x00, 0xff, 0x13, 0x37, 0x94, 0x00]));
      socket.write('\u001b[32mINFO\u001b[0m | booting\r\n');
      socket.write(Buffer.from([0x94, 0xc3, 0x7f, 0xff])); // length 32767: corrupt
      socket.write(Buffer.from([0x94, 0xc3, 0x00, 0x03, 0xff, 0xff, 0xff])); // not a FromRadio
      socket.write(frameFromRadio({ payloadVariant: { case: 'myInfo', value: { myNodeNum: 0x1234 } } }));
      socket.write(frameFromRadio({ payloadVariant: { case: 'configCompleteId', value: 1 } })); // not ours
      socket.write(
        frameFromRadio({
          payloadVariant: { case: 'configCompleteId', value: toRadio.payloadVariant.value },
        }),
      );
    });
    cleanups.push(() => server.close());
    const r = await connectedLink(server.port);
    expect(r.link.myNodeNum).toBe(0x1234);
    expect(r.frameErrors).toEqual([
      'frame: frame length 32767 exceeds 512',
      'protobuf: malformed FromRadio (3 bytes)',
    ]);
    // The garbage has no newline of its own: it prefixes the next log line, colour codes stripped.
    expect(r.logLines).toHaveLength(1);
    expect(r.logLines[0]).toMatch(/INFO \| booting$/);
    expect(server.sockets).toHaveLength(1);
  });

  it('keeps running when its owner callbacks throw', async () => {
    const sim = simulator();
    const { port } = await sim.start();
    const r = link(port, {
      onFromRadio: () => {
        throw new Error('owner bug');
      },
    });
    r.link.start();
    await waitFor(() => r.link.status.state === 'connected', 'connected');
  });

  it('sends heartbeats while connected and answers a device reboot with a new handshake', async () => {
    const { server, toRadios } = await deviceServer();
    cleanups.push(() => server.close());
    const r = link(server.port, { heartbeatMs: 20 });
    r.link.start();
    await waitFor(
      () => toRadios.filter((t) => t.payloadVariant.case === 'heartbeat').length >= 2,
      'heartbeats',
    );
    server.sockets[0]!.write(frameFromRadio({ payloadVariant: { case: 'rebooted', value: true } }));
    await waitFor(
      () => toRadios.filter((t) => t.payloadVariant.case === 'wantConfigId').length === 2,
      'a new want_config_id',
    );
    await waitFor(() => states(r).filter((s) => s === 'connected').length === 2, 'connected again');
    expect(server.sockets).toHaveLength(1);
  });
});

/** A device that completes every handshake and records each ToRadio it is sent. */
async function deviceServer() {
  const toRadios: Mesh.ToRadio[] = [];
  const server = await startDevice((toRadio, socket) => {
    toRadios.push(toRadio);
    if (toRadio.payloadVariant.case === 'wantConfigId') {
      socket.write(
        frameFromRadio({
          payloadVariant: { case: 'configCompleteId', value: toRadio.payloadVariant.value },
        }),
      );
    }
  });
  const heartbeats = () => toRadios.filter((t) => t.payloadVariant.case === 'heartbeat').length;
  return { server, toRadios, heartbeats };
}

describe('RadioLink.stop', () => {
  it('leaves no sockets or timers behind', async () => {
    const timers = trackTimers();
    try {
      const device = await deviceServer();
      // Its own sockets, not the process's: other tests' sockets may still be closing.
      const tcp = tcpTransport('127.0.0.1', device.server.port, { connectTimeoutMs: 1_000 });
      const opened: Duplex[] = [];
      const transport: RadioTransport = {
        kind: tcp.kind,
        address: tcp.address,
        connect: async (signal) => {
          const stream = await tcp.connect(signal);
          opened.push(stream);
          return stream;
        },
      };
      const r = link(device.server.port, { heartbeatMs: 30, transport });
      r.link.start();
      await waitFor(() => device.heartbeats() >= 2, 'two heartbeats');
      await r.link.stop();
      expect(r.link.status.state).toBe('disconnected');
      expect(timers.pending()).toBe(0);
      expect(opened).toHaveLength(1);
      expect(opened.every((s) => s.destroyed && s.closed)).toBe(true);
      await device.server.close();
    } finally {
      timers.restore();
    }
  });

  it('returns at once while waiting to reconnect, and stops reconnecting', { timeout: 3_000 }, async () => {
    const server = await startServer((socket) => socket.destroy());
    cleanups.push(() => server.close());
    const timers = trackTimers();
    try {
      const r = link(server.port, { reconnect: { initialMs: 60_000 } });
      r.link.start();
      await waitFor(
        () => server.sockets.length === 1 && r.link.status.state === 'disconnected',
        'a failed attempt',
      );
      await r.link.stop();
      // No timer left means no reconnect is scheduled: none can come later.
      expect(timers.pending()).toBe(0);
      expect(server.sockets).toHaveLength(1);
      expect(r.link.status.lastError).toBe('the device closed the connection');
    } finally {
      timers.restore();
    }
  });

  it('abandons a pending connect through its abort signal', { timeout: 3_000 }, async () => {
    let aborted = false;
    const hanging: RadioTransport = {
      kind: 'serial',
      address: '/dev/ttyUSB9',
      connect: (signal) =>
        new Promise((_, reject) =>
          signal?.addEventListener('abort', () => {
            aborted = true;
            reject(new Error('aborted'));
          }),
        ),
    };
    const slow = new RadioLink({
      transport: hanging,
      log: silentLog,
      heartbeatMs: 60_000,
      onStatus: () => {},
      onFromRadio: () => {},
    });
    slow.start();
    await waitFor(() => slow.status.state === 'connecting', 'connecting');
    await slow.stop();
    expect(aborted).toBe(true);
    expect(slow.status).toMatchObject({
      state: 'disconnected',
      transport: 'serial',
      address: '/dev/ttyUSB9',
    });
  });
});
