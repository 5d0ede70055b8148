import { Duplex } from 'node:stream';
import { fromBinary } from '@bufbuild/protobuf';
import { Mesh } from '@meshtastic/protobufs';
import { describe, expect, it } from 'vitest';
import { StreamFramer } from '../../src/mesh/framing.js';
import { isRadioCandidate, probeSerialPorts, tcpTransport } from '../../src/mesh/transport.js';
import { frameFromRadio, silentLog, startServer } from './helpers.js';

/**
 * A serial device on the other end of a Duplex: `answer` decides what it writes back for each
 * ToRadio. Real ports cannot run here; this speaks the same wire format.
 */
function fakeSerialDevice(
  answer: (toRadio: Mesh.ToRadio) => Uint8Array | undefined,
): Duplex & { received: Mesh.ToRadio[] } {
  const framer = new StreamFramer();
  const received: Mesh.ToRadio[] = [];
  const device = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, callback) {
      for (const event of framer.push(chunk)) {
        if (event.kind !== 'frame') continue;
        const toRadio = fromBinary(Mesh.ToRadioSchema, event.payload);
        received.push(toRadio);
        const reply = answer(toRadio);
        if (reply) setImmediate(() => device.push(reply));
      }
      callback();
    },
  });
  return Object.assign(device, { received });
}

const meshtasticDevice = () =>
  fakeSerialDevice((t) =>
    t.payloadVariant.case === 'wantConfigId'
      ? frameFromRadio({ payloadVariant: { case: 'myInfo', value: { myNodeNum: 99 } } })
      : undefined,
  );

describe('isRadioCandidate', () => {
  it('keeps USB serial ports and known vendor ids, never legacy ttyS ports', () => {
    expect(isRadioCandidate({ path: '/dev/ttyUSB0' })).toBe(true);
    expect(isRadioCandidate({ path: '/dev/ttyACM3' })).toBe(true);
    expect(isRadioCandidate({ path: '/dev/cu.usbserial-0001', vendorId: '10C4' })).toBe(true);
    expect(isRadioCandidate({ path: '/dev/tty.usbmodem1101', vendorId: '239a' })).toBe(true);
    expect(isRadioCandidate({ path: '/dev/ttyS0' })).toBe(false);
    expect(isRadioCandidate({ path: '/dev/ttyS4', vendorId: '10c4' })).toBe(false);
    expect(isRadioCandidate({ path: '/dev/ttyAMA0' })).toBe(false);
    expect(isRadioCandidate({ path: '/dev/cu.Bluetooth-Incoming-Port', vendorId: '05ac' })).toBe(false);
  });
});

describe('probeSerialPorts', () => {
  it('returns undefined at once when there is no candidate port (no waiting for the timeout)', {
    timeout: 2_000,
  }, async () => {
    const found = await probeSerialPorts({
      timeoutMs: 60_000,
      log: silentLog,
      listPorts: async () => [{ path: '/dev/ttyS0' }, { path: '/dev/ttyS1' }],
      openPort: () => Promise.reject(new Error('a legacy port must not be opened')),
    });
    expect(found).toBeUndefined();
  });

  it('lists the ports itself (serialport, or /dev where udevadm is missing) and answers promptly', {
    timeout: 5_000,
  }, async () => {
    const found = await probeSerialPorts({
      timeoutMs: 60_000,
      log: silentLog,
      openPort: () => Promise.reject(new Error('no device here')),
    });
    expect(found).toBeUndefined();
  });

  it('finds the port that answers want_config_id with a FromRadio and closes every port it opened', async () => {
    const devices = new Map<string, ReturnType<typeof fakeSerialDevice>>([
      ['/dev/ttyUSB0', fakeSerialDevice(() => undefined)],
      ['/dev/ttyUSB1', fakeSerialDevice(() => new TextEncoder().encode('garbage without frames\r\n'))],
      ['/dev/ttyACM0', meshtasticDevice()],
    ]);
    const found = await probeSerialPorts({
      timeoutMs: 2_000,
      log: silentLog,
      listPorts: async () => [...devices.keys()].map((path) => ({ path })),
      openPort: async (path) => devices.get(path)!,
    });
    expect(found).toBe('/dev/ttyACM0');
    for (const [path, device] of devices) {
      expect(device.destroyed, path).toBe(true);
      expect(device.received[0]?.payloadVariant.case, path).toBe('wantConfigId');
    }
  });

  it('gives up after the timeout when no port answers, and survives ports that fail to open', async () => {
    const silent = fakeSerialDevice(() => undefined);
    const found = await probeSerialPorts({
      timeoutMs: 100,
      log: silentLog,
      listPorts: async () => [{ path: '/dev/ttyUSB0' }, { path: '/dev/ttyUSB1' }],
      openPort: async (path) => {
        if (path === '/dev/ttyUSB1') throw new Error('Permission denied');
        return silent;
      },
    });
    expect(found).toBeUndefined();
    expect(silent.destroyed).toBe(true);
  });
});

describe('tcpTransport', () => {
  it('connects to a listening port', async () => {
    const server = await startServer(() => {});
    try {
      const stream = await tcpTransport('127.0.0.1', server.port, { connectTimeoutMs: 1_000 }).connect();
      expect(stream.writable).toBe(true);
      stream.destroy();
    } finally {
      await server.close();
    }
  });

  it('rejects when nothing listens, and when aborted', async () => {
    const server = await startServer(() => {});
    const port = server.port;
    await server.close();
    const transport = tcpTransport('127.0.0.1', port, { connectTimeoutMs: 1_000 });
    expect(transport.address).toBe(`127.0.0.1:${port}`);
    await expect(transport.connect()).rejects.toThrow(/ECONNREFUSED/);
    await expect(transport.connect(AbortSignal.abort())).rejects.toThrow('connect aborted');
  });
});
