import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { create, fromBinary, type MessageInitShape, toBinary } from '@bufbuild/protobuf';
import { Mesh } from '@meshtastic/protobufs';
import { pino } from 'pino';
import { encodeFrame, StreamFramer } from '../../src/mesh/framing.js';
import { decodeFromRadio } from '../../src/mesh/packet-decoder.js';

export const silentLog = pino({ level: 'silent' });

export async function waitFor<T>(
  probe: () => T | undefined | false,
  what: string,
  timeoutMs = 5_000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function frameToRadio(init: MessageInitShape<typeof Mesh.ToRadioSchema>): Uint8Array {
  return encodeFrame(toBinary(Mesh.ToRadioSchema, create(Mesh.ToRadioSchema, init)));
}

export function frameFromRadio(init: MessageInitShape<typeof Mesh.FromRadioSchema>): Uint8Array {
  return encodeFrame(toBinary(Mesh.FromRadioSchema, create(Mesh.FromRadioSchema, init)));
}

/** A bare stream-protocol client, like an app in TCP mode: collects every FromRadio and log line. */
export class RawClient {
  readonly messages: Mesh.FromRadio[] = [];
  readonly logLines: string[] = [];
  private readonly framer = new StreamFramer();
  closed = false;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      for (const event of this.framer.push(chunk)) {
        if (event.kind === 'frame') this.messages.push(decodeFromRadio(event.payload));
        else if (event.kind === 'log') this.logLines.push(event.line);
        else throw new Error(`corrupt frame from the simulator: ${event.reason}`);
      }
    });
    socket.on('close', () => {
      this.closed = true;
    });
  }

  static async connect(port: number): Promise<RawClient> {
    const socket = connect({ host: '127.0.0.1', port });
    await once(socket, 'connect');
    return new RawClient(socket);
  }

  send(init: MessageInitShape<typeof Mesh.ToRadioSchema>): void {
    this.socket.write(frameToRadio(init));
  }

  /** Sends want_config_id and resolves with the handshake messages once config_complete_id arrives. */
  async handshake(configId: number): Promise<Mesh.FromRadio[]> {
    const start = this.messages.length;
    this.send({ payloadVariant: { case: 'wantConfigId', value: configId } });
    const end = await waitFor(() => {
      const i = this.messages.findIndex(
        (m, index) =>
          index >= start &&
          m.payloadVariant.case === 'configCompleteId' &&
          m.payloadVariant.value === configId,
      );
      return i === -1 ? undefined : i + 1;
    }, 'config_complete_id');
    return this.messages.slice(start, end);
  }

  packets(): Mesh.MeshPacket[] {
    return this.messages.flatMap((m) => (m.payloadVariant.case === 'packet' ? [m.payloadVariant.value] : []));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    const closed = once(this.socket, 'close');
    this.socket.destroy();
    await closed;
  }
}

/** A TCP server on a free loopback port whose per-connection behaviour the test decides. */
export async function startServer(
  onConnection: (socket: Socket) => void,
): Promise<{ server: Server; port: number; sockets: Socket[]; close(): Promise<void> }> {
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => {});
    onConnection(socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    server,
    port,
    sockets,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/**
 * A device on a free loopback port: `onToRadio` gets each ToRadio a client sends, decoded, with
 * the socket to answer on.
 */
export function startDevice(onToRadio: (toRadio: Mesh.ToRadio, socket: Socket) => void) {
  return startServer((socket) => {
    const framer = new StreamFramer();
    socket.on('data', (chunk: Buffer) => {
      for (const event of framer.push(chunk)) {
        if (event.kind !== 'frame') continue;
        onToRadio(fromBinary(Mesh.ToRadioSchema, event.payload), socket);
      }
    });
  });
}

/**
 * Counts the timers created through the globals from now on that have neither fired nor been
 * cleared (intervals count until cleared). Process-wide resource counts are too noisy for this:
 * the test runner keeps timers of its own.
 */
export function trackTimers(): { pending(): number; restore(): void } {
  const real = {
    setTimeout: globalThis.setTimeout,
    setInterval: globalThis.setInterval,
    clearTimeout: globalThis.clearTimeout,
    clearInterval: globalThis.clearInterval,
  };
  const pending = new Set<unknown>();
  globalThis.setTimeout = ((fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const handle = real.setTimeout(() => {
      pending.delete(handle);
      fn(...args);
    }, ms);
    pending.add(handle);
    return handle;
  }) as typeof setTimeout;
  globalThis.setInterval = ((fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const handle = real.setInterval(fn, ms, ...args);
    pending.add(handle);
    return handle;
  }) as typeof setInterval;
  globalThis.clearTimeout = ((handle?: NodeJS.Timeout) => {
    pending.delete(handle);
    real.clearTimeout(handle);
  }) as typeof clearTimeout;
  globalThis.clearInterval = ((handle?: NodeJS.Timeout) => {
    pending.delete(handle);
    real.clearInterval(handle);
  }) as typeof clearInterval;
  return {
    pending: () => pending.size,
    restore: () => Object.assign(globalThis, real),
  };
}
