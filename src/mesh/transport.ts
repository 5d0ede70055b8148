/**
 * Transports to a Meshtastic device: USB serial or TCP (the firmware's API on port 4403, or the
 * simulator). Both give a Node Duplex that carries the stream protocol of `framing.ts`.
 *
 * serialport is imported lazily: the hub only pays for its native binding when it uses it.
 */
import { readdir } from 'node:fs/promises';
import { connect as netConnect } from 'node:net';
import type { Duplex } from 'node:stream';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { Mesh } from '@meshtastic/protobufs';
import { withTimeout } from '../kernel/timing.js';
import type { Logger } from '../log.js';
import { encodeFrame, FRAME_START2, StreamFramer } from './framing.js';

export interface RadioTransport {
  readonly kind: 'serial' | 'tcp';
  /** `/dev/ttyUSB0` or `127.0.0.1:4403`. */
  readonly address: string;
  /** Opens a new stream to the device; an aborted signal abandons a pending attempt. */
  connect(signal?: AbortSignal): Promise<Duplex>;
}

export function tcpTransport(
  host: string,
  port: number,
  options: { connectTimeoutMs: number },
): RadioTransport {
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return {
    kind: 'tcp',
    address,
    connect(signal) {
      return new Promise<Duplex>((resolve, reject) => {
        const socket = netConnect({ host, port });
        const timer = setTimeout(
          () => fail(new Error(`no TCP connection to ${address} within ${options.connectTimeoutMs} ms`)),
          options.connectTimeoutMs,
        );
        const onAbort = () => fail(new Error('connect aborted'));
        const cleanup = () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          socket.off('connect', onConnect);
          socket.off('error', fail);
        };
        function fail(error: Error) {
          cleanup();
          socket.destroy();
          reject(error);
        }
        function onConnect() {
          cleanup();
          socket.setNoDelay(true);
          // Notices a radio that vanished from the network without a FIN (power cut, Wi-Fi drop).
          socket.setKeepAlive(true, 15_000);
          resolve(socket);
        }
        if (signal?.aborted) return fail(new Error('connect aborted'));
        signal?.addEventListener('abort', onAbort, { once: true });
        socket.once('connect', onConnect);
        socket.once('error', fail);
      });
    },
  };
}

export function serialTransport(path: string, baudRate: number): RadioTransport {
  return {
    kind: 'serial',
    address: path,
    connect: () => openSerialPort(path, baudRate),
  };
}

async function openSerialPort(path: string, baudRate: number): Promise<Duplex> {
  const { SerialPort } = await import('serialport');
  return new Promise<Duplex>((resolve, reject) => {
    // hupcl false: dropping DTR on close resets many ESP32 boards (the Python client runs
    // `stty -hupcl` for the same reason).
    const port = new SerialPort({ path, baudRate, autoOpen: false, hupcl: false });
    port.open((error) => (error ? reject(error) : resolve(port)));
  });
}

/** USB vendor ids of the serial bridges and MCUs Meshtastic boards use. */
const RADIO_USB_VENDOR_IDS = new Set([
  '10c4', // Silicon Labs CP210x
  '1a86', // WCH CH340 / CH9102
  '0403', // FTDI
  '303a', // Espressif native USB (ESP32-S3)
  '2e8a', // Raspberry Pi RP2040
  '239a', // Adafruit (nRF52 bootloaders: RAK4631, T-Echo)
]);

export interface SerialPortInfo {
  path: string;
  vendorId?: string | undefined;
}

/** Whether a port may be a Meshtastic radio: USB serial, never the legacy on-board UARTs. */
export function isRadioCandidate(port: SerialPortInfo): boolean {
  if (/^\/dev\/ttyS\d+$/.test(port.path)) return false;
  if (/^\/dev\/tty(USB|ACM)\d+$/.test(port.path)) return true;
  return port.vendorId !== undefined && RADIO_USB_VENDOR_IDS.has(port.vendorId.toLowerCase());
}

export interface SerialProbeOptions {
  timeoutMs: number;
  log: Logger;
  baudRate?: number;
  /** Seams for tests; default to serialport's list and open. */
  listPorts?: () => Promise<SerialPortInfo[]>;
  openPort?: (path: string, baudRate: number) => Promise<Duplex>;
}

/**
 * RADIO=auto: asks every candidate port at once for the device config and returns the first
 * that answers with a well-formed FromRadio frame within `timeoutMs`; undefined when none does.
 * Every opened port is closed before this returns, so the caller can open the winner again.
 */
export async function probeSerialPorts(options: SerialProbeOptions): Promise<string | undefined> {
  const { log, timeoutMs } = options;
  const baudRate = options.baudRate ?? 115200;
  const ports = await (options.listPorts ?? listSerialPorts)().catch((error: unknown) => {
    log.debug({ err: error }, 'cannot list serial ports');
    return [] as SerialPortInfo[];
  });
  const candidates = ports.filter(isRadioCandidate).map((p) => p.path);
  if (candidates.length === 0) {
    log.debug('no USB serial ports to probe');
    return undefined;
  }
  log.info({ ports: candidates, timeoutMs }, 'probing serial ports for a Meshtastic radio');
  const open = options.openPort ?? openSerialPort;
  const streams: Duplex[] = [];
  const controller = new AbortController();
  try {
    const firstAnswer = new Promise<string | undefined>((resolve) => {
      let pending = candidates.length;
      for (const path of candidates) {
        void probeOne(path, () => open(path, baudRate), streams, controller.signal, log).then((answered) => {
          if (answered) resolve(path);
          else if (--pending === 0) resolve(undefined);
        });
      }
    });
    const found = await withTimeout(firstAnswer, timeoutMs, () => new Error('no answer in time')).catch(
      () => undefined,
    );
    if (found) log.info({ path: found }, 'Meshtastic radio found');
    else log.info({ ports: candidates }, 'no serial port answered as a Meshtastic radio');
    return found;
  } finally {
    controller.abort();
    await Promise.all(streams.map((s) => closeStream(s, 1_000)));
  }
}

async function probeOne(
  path: string,
  open: () => Promise<Duplex>,
  streams: Duplex[],
  signal: AbortSignal,
  log: Logger,
): Promise<boolean> {
  let stream: Duplex;
  try {
    stream = await open();
  } catch (error) {
    log.debug({ path, err: error }, 'cannot open serial port');
    return false;
  }
  if (signal.aborted) {
    // Opened after the probe gave up: nobody else will close it.
    stream.on('error', () => {});
    stream.destroy();
    return false;
  }
  streams.push(stream);
  const framer = new StreamFramer();
  return new Promise<boolean>((resolve) => {
    const done = (ok: boolean) => {
      stream.off('data', onData);
      stream.off('close', onClose);
      signal.removeEventListener('abort', onClose);
      resolve(ok);
    };
    const onData = (chunk: Uint8Array) => {
      for (const event of framer.push(chunk)) {
        if (event.kind !== 'frame') continue;
        try {
          const message = fromBinary(Mesh.FromRadioSchema, event.payload);
          if (message.payloadVariant.case !== undefined) return done(true);
        } catch {
          // Not a Meshtastic frame; keep listening until the timeout.
        }
      }
    };
    const onClose = () => done(false);
    stream.on('error', (error) => log.debug({ path, err: error }, 'serial probe error'));
    stream.on('data', onData);
    stream.once('close', onClose);
    signal.addEventListener('abort', onClose, { once: true });
    const wantConfig = create(Mesh.ToRadioSchema, {
      payloadVariant: { case: 'wantConfigId', value: (Math.random() * 0xffffffff) >>> 0 },
    });
    // A run of START2 bytes wakes a sleeping device's serial API first (as the Python client does).
    stream.write(new Uint8Array(32).fill(FRAME_START2));
    stream.write(encodeFrame(toBinary(Mesh.ToRadioSchema, wantConfig)));
  });
}

async function listSerialPorts(): Promise<SerialPortInfo[]> {
  try {
    const { SerialPort } = await import('serialport');
    return await SerialPort.list();
  } catch {
    // SerialPort.list needs udevadm on Linux, absent in minimal images; /dev is enough for USB ttys.
    const names = await readdir('/dev').catch(() => [] as string[]);
    return names.filter((n) => /^tty(USB|ACM)\d+$/.test(n)).map((n) => ({ path: `/dev/${n}` }));
  }
}

function closeStream(stream: Duplex, timeoutMs: number): Promise<void> {
  if (stream.destroyed && stream.closed) return Promise.resolve();
  const closed = new Promise<void>((resolve) => stream.once('close', () => resolve()));
  stream.destroy();
  // A port that never reports 'close' must not hold up the probe.
  return withTimeout(closed, timeoutMs, () => new Error('the port did not close')).catch(() => {});
}
