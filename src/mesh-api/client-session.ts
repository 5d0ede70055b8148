/**
 * One client of the mesh API, treated as firmware treats an API client (PhoneAPI.cpp): nothing
 * is sent until it asks with `want_config_id`; then the handshake, then every packet. A fresh
 * framer per connection; malformed input is counted and skipped, never thrown.
 *
 * The radio and the other clients never wait for this one: live frames are written without
 * waiting for 'drain', and a client that leaves more than `bufferLimitBytes` unread is dropped.
 * Only the handshake (possibly thousands of node infos) waits for drain, bounded in time.
 */
import type { Socket } from 'node:net';
import { create, type MessageInitShape, toBinary } from '@bufbuild/protobuf';
import { Mesh } from '@meshtastic/protobufs';
import { StreamClosedError, waitForDrain } from '../kernel/timing.js';
import { encodeFrame, StreamFramer, toRadioEvents } from '../mesh/framing.js';

type FromRadioVariant = MessageInitShape<typeof Mesh.FromRadioSchema>['payloadVariant'];

export type DropReason = 'slow' | 'idle' | 'closed' | 'disconnect' | 'stopping' | 'error';
export type ClientFrameError = 'frame' | 'protobuf';

export interface ClientSessionOptions {
  bufferLimitBytes: number;
  idleTimeoutMs: number;
  /** How long the handshake may wait for the client to read. */
  handshakeDrainMs: number;
  handshake(nonce: number): FromRadioVariant[];
  /** Answer to a heartbeat (firmware replies with its queue status). */
  queueStatus(): MessageInitShape<typeof Mesh.QueueStatusSchema>;
  onPacket(session: ClientSession, packet: Mesh.MeshPacket): void;
  onFrameError(session: ClientSession, kind: ClientFrameError): void;
  onClosed(session: ClientSession, reason: DropReason): void;
}

/** Live frames held while the handshake is being written, then sent after it. */
const MAX_HELD_DURING_HANDSHAKE = 256;

export class ClientSession {
  readonly address: string;
  readonly connectedAt = Date.now();
  /** Handshake done: live frames flow. */
  configured = false;
  framesSent = 0;
  packetsFromClient = 0;
  private readonly framer = new StreamFramer();
  private fromRadioId = 0;
  private held: Uint8Array[] | undefined;
  private handshaking = false;
  private closed = false;
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly socket: Socket,
    private readonly options: ClientSessionOptions,
  ) {
    this.address = `${socket.remoteAddress}:${socket.remotePort}`;
  }

  get bufferedBytes(): number {
    return this.socket.writableLength;
  }

  start(): void {
    this.socket.setNoDelay(true);
    this.socket.setKeepAlive(true, 15_000);
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk));
    // Errors (ECONNRESET, EPIPE) end in 'close'; nothing to add.
    this.socket.on('error', () => {});
    this.socket.on('end', () => this.socket.destroy());
    this.socket.on('close', () => this.finish('closed'));
    this.idleTimer = setTimeout(() => this.drop('idle'), this.options.idleTimeoutMs);
    this.idleTimer.unref();
  }

  /** Ends the session: `reason` is reported once, to the server. */
  drop(reason: DropReason): void {
    this.finish(reason);
    this.socket.destroy();
  }

  /** A frame for every configured client (encoded once by the caller). */
  sendLive(frame: Uint8Array): void {
    if (this.closed) return;
    if (this.held) {
      if (this.held.length >= MAX_HELD_DURING_HANDSHAKE) this.held.shift();
      this.held.push(frame);
      return;
    }
    if (!this.configured) return;
    this.write(frame);
  }

  /** A FromRadio for this client alone (queue status, a refusal), with this session's id. */
  send(variant: FromRadioVariant): void {
    if (this.closed) return;
    this.write(this.encode(variant));
  }

  private write(frame: Uint8Array): void {
    if (this.socket.writableLength + frame.length > this.options.bufferLimitBytes) {
      this.drop('slow');
      return;
    }
    this.framesSent++;
    this.socket.write(frame);
  }

  private encode(variant: FromRadioVariant): Uint8Array {
    this.fromRadioId = (this.fromRadioId + 1) >>> 0 || 1;
    return encodeFrame(
      toBinary(
        Mesh.FromRadioSchema,
        create(Mesh.FromRadioSchema, { id: this.fromRadioId, payloadVariant: variant }),
      ),
    );
  }

  private finish(reason: DropReason): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.idleTimer);
    this.held = undefined;
    this.options.onClosed(this, reason);
  }

  private onData(chunk: Buffer): void {
    if (this.closed) return;
    // Any frame counts as contact, as in firmware (lastContactMsec); so does any byte here.
    this.idleTimer?.refresh();
    for (const event of toRadioEvents(this.framer.push(chunk))) {
      if (this.closed) return;
      if (event.kind === 'message') this.onToRadio(event.message);
      else this.options.onFrameError(this, event.kind === 'corrupt' ? 'frame' : 'protobuf');
    }
  }

  private onToRadio(message: Mesh.ToRadio): void {
    const variant = message.payloadVariant;
    switch (variant.case) {
      case 'wantConfigId':
        void this.replay(variant.value);
        break;
      case 'packet':
        this.packetsFromClient++;
        this.options.onPacket(this, variant.value);
        break;
      case 'heartbeat':
        // ToRadio.heartbeat: firmware answers with its queue status (PhoneAPI::getFromRadio).
        if (variant.value.nonce !== 1) this.send({ case: 'queueStatus', value: this.options.queueStatus() });
        break;
      case 'disconnect':
        this.drop('disconnect');
        break;
      default:
        // xmodem (files on the device) and MQTT client proxy: not served through the hub.
        break;
    }
  }

  /** Writes the handshake, waiting for the client to read when it is large; then goes live. */
  private async replay(nonce: number): Promise<void> {
    if (this.handshaking) return;
    this.handshaking = true;
    this.configured = false;
    this.held = [];
    try {
      for (const variant of this.options.handshake(nonce)) {
        if (this.closed) return;
        this.framesSent++;
        if (!this.socket.write(this.encode(variant))) {
          await waitForDrain(this.socket, this.options.handshakeDrainMs, {
            timeout: (ms) => new Error(`client did not read its handshake for ${ms} ms`),
          });
        }
      }
      const held = this.held ?? [];
      this.held = undefined;
      this.configured = true;
      for (const frame of held) this.write(frame);
    } catch (error) {
      if (!(error instanceof StreamClosedError)) this.drop('slow');
    } finally {
      this.held = undefined;
      this.handshaking = false;
    }
  }
}
