/**
 * The hub's link to its Meshtastic device over a RadioTransport: connects, performs the
 * `want_config_id` handshake (done at the echoing `config_complete_id`), keeps the API session
 * alive with `heartbeat`, hands every FromRadio to its owner, and reconnects with capped
 * exponential backoff for as long as it runs.
 *
 * A plain class, not an actor: the hub's RadioActor owns one and maps its callbacks onto the bus.
 * Nothing that arrives on the stream may throw out of a stream callback: malformed input is
 * reported through `onFrameError` and the link carries on.
 */
import { randomInt } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { create } from '@bufbuild/protobuf';
import { Mesh } from '@meshtastic/protobufs';
import type { RadioLinkState, RadioStatus } from '../domain/radio.js';
import { exponentialDelay } from '../kernel/backoff.js';
import { pause, waitForDrain, withTimeout } from '../kernel/timing.js';
import type { Logger } from '../log.js';
import { HandshakeTimeoutError, TransportClosedError } from './errors.js';
import { encodeFrame, FRAME_START2, StreamFramer } from './framing.js';
import { decodeFromRadio, encodeToRadio } from './packet-decoder.js';
import type { RadioTransport } from './transport.js';

export type FrameErrorKind = 'frame' | 'protobuf';

export interface RadioLinkOptions {
  transport: RadioTransport;
  log: Logger;
  /** Interval of ToRadio.heartbeat while connected; serial devices drop a silent API session. */
  heartbeatMs: number;
  /** How long the device may take to answer `want_config_id` with `config_complete_id`. */
  handshakeTimeoutMs?: number;
  /** Reconnect delays: `initialMs`, doubled after each failed attempt up to `maxMs`. */
  reconnect?: { initialMs?: number; maxMs?: number };
  /** Reported in the status: the transport leads to the built-in simulator. */
  simulated?: boolean;
  onStatus(status: RadioStatus): void;
  /** Every FromRadio, handshake messages (my_info, node_info, …) included. */
  onFromRadio(message: Mesh.FromRadio, receivedAt: number): void;
  /** A line of the device's debug log (text outside frames). */
  onLogLine?(line: string): void;
  /**
   * A corrupt frame (`kind` 'frame') or a FromRadio that does not decode ('protobuf').
   * `kind` is a bounded set (fit for a metric label); `detail` is free text for the log.
   */
  onFrameError?(kind: FrameErrorKind, detail: string): void;
  /**
   * The device spoke again after leaving a packet unanswered for more than QUIET_NOTICE_MS
   * (a stall too short to drop the link): `quietSince` is when that packet was written.
   */
  onQuietEnded?(quietSince: number): void;
}

interface Session {
  readonly stream: Duplex;
  readonly framer: StreamFramer;
  configId: number;
  connected: boolean;
  everConnected: boolean;
  closed: boolean;
  /** Why the session ended, when it did not end cleanly. */
  error?: string;
  handshakeTimer?: NodeJS.Timeout;
  heartbeatTimer?: NodeJS.Timeout;
  /** When the device last sent anything (a frame or a log line). */
  lastDataAt: number;
  /** Set after a packet is written; cleared by any byte from the device (see ANSWER_TIMEOUT_MS). */
  answerTimer?: NodeJS.Timeout;
  /** When the packet the device has not answered yet was written. */
  unansweredSince?: number;
  /** Sends want_config_id again while the device stays silent during the handshake. */
  configRetryTimer?: NodeJS.Timeout;
  drained?: Promise<void>;
  detach(): void;
  /** Resolves the attempt in the reconnect loop: whether the session got to 'connected'. */
  finish(everConnected: boolean): void;
}

const DEFAULT_HANDSHAKE_TIMEOUT_MS = 15_000;
const DEFAULT_RECONNECT_INITIAL_MS = 1_000;
// The radio is back within 5 s of its return (issue 17): a connection attempt to a local radio
// costs a refused connect or a serial open, so trying every 4 s while it is away is cheap.
const DEFAULT_RECONNECT_MAX_MS = 4_000;
// Firmware PhoneAPI.h gives these want_config_id values special meanings (config only, nodes only).
const SPECIAL_CONFIG_NONCES = new Set([69420, 69421]);
// The Python client writes 32 START2 bytes to wake a device whose serial API is asleep.
const SERIAL_WAKE = new Uint8Array(32).fill(FRAME_START2);
const SERIAL_WAKE_PAUSE_MS = 100;
const STOP_CLOSE_BOUND_MS = 2_000;
/**
 * Firmware answers every ToRadio.packet at once with a FromRadio.queueStatus: a device that sends
 * nothing at all this long after one has stopped answering (hung firmware, a dead Wi-Fi route)
 * though its connection is open. The link drops it and reconnects (issue 17, "radio stalling").
 */
export const ANSWER_TIMEOUT_MS = 8_000;
/**
 * Longer than this between a packet and the device's first answer (it answers every packet at
 * once) means the radio was silent: `onQuietEnded` tells the owner when it speaks again.
 */
const QUIET_NOTICE_MS = 2_000;
/**
 * During the handshake, want_config_id is sent again this often while the device has said
 * nothing since it was sent (a radio coming back from a stall answers the next one); a device
 * streaming its config is never interrupted.
 */
const SILENT_CONFIG_RETRY_MS = 2_000;

const noop = () => {};

export class RadioLink {
  private state: RadioLinkState = 'disconnected';
  private lastError: string | undefined;
  private nodeNum: number | undefined;
  private session: Session | undefined;
  private running: Promise<void> | undefined;
  private stopping = false;
  /** Aborted by `stop()`: ends a pending connect or reconnect pause at once. */
  private halt = new AbortController();
  private consecutiveFailures = 0;

  constructor(private readonly options: RadioLinkOptions) {}

  get status(): RadioStatus {
    const { transport, simulated } = this.options;
    return {
      state: this.state,
      transport: transport.kind,
      address: transport.address,
      simulated: simulated ?? false,
      ...(this.nodeNum === undefined ? {} : { myNodeNum: this.nodeNum }),
      ...(this.lastError === undefined ? {} : { lastError: this.lastError }),
    };
  }

  /** The device's own node number (MyNodeInfo.my_node_num), once it told us. */
  get myNodeNum(): number | undefined {
    return this.nodeNum;
  }

  /** Starts connecting in the background; the link keeps reconnecting until `stop()`. */
  start(): void {
    if (this.running) return;
    this.stopping = false;
    this.halt = new AbortController();
    this.running = this.run();
  }

  /** Closes the stream, cancels timers and any pending reconnect. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.halt.abort();
    const session = this.session;
    const closed = session ? this.closeSession(session) : Promise.resolve();
    await this.running;
    this.running = undefined;
    // A transport that never reports 'close' must not hold up the hub's shutdown.
    await withTimeout(closed, STOP_CLOSE_BOUND_MS, () => new Error('radio stream did not close')).catch(noop);
  }

  /** Sends one ToRadio; waits for the stream to drain when it asks to. */
  async send(message: Mesh.ToRadio): Promise<void> {
    const session = this.session;
    if (!session?.connected) throw new TransportClosedError();
    await this.write(session, encodeFrame(encodeToRadio(message)));
    if (message.payloadVariant.case === 'packet') this.expectAnswer(session);
  }

  /** After a packet: the device must say something within ANSWER_TIMEOUT_MS, or the link is dropped. */
  private expectAnswer(session: Session): void {
    if (session.answerTimer || session.closed) return;
    session.unansweredSince = Date.now();
    session.answerTimer = setTimeout(() => {
      session.answerTimer = undefined;
      if (session.closed) return;
      session.error = `the radio stopped answering (nothing for ${ANSWER_TIMEOUT_MS / 1000} s after a packet)`;
      session.stream.destroy();
    }, ANSWER_TIMEOUT_MS);
  }

  private async run(): Promise<void> {
    const initialMs = this.options.reconnect?.initialMs ?? DEFAULT_RECONNECT_INITIAL_MS;
    const maxMs = this.options.reconnect?.maxMs ?? DEFAULT_RECONNECT_MAX_MS;
    let retries = 0;
    while (!this.stopping) {
      const connected = await this.attempt();
      if (this.stopping) break;
      if (connected) retries = 0;
      // The first wait is initialMs even above maxMs; then it doubles, at most maxMs.
      const delayMs = retries === 0 ? initialMs : exponentialDelay(retries, initialMs, maxMs);
      retries++;
      this.setState('disconnected');
      this.options.log.debug(
        { address: this.options.transport.address, delayMs },
        'radio reconnect scheduled',
      );
      await pause(delayMs, this.halt.signal);
    }
    this.setState('disconnected');
  }

  /** One connection, from connect to close. Resolves true when it reached 'connected'. */
  private async attempt(): Promise<boolean> {
    this.setState('connecting');
    let stream: Duplex;
    try {
      stream = await this.options.transport.connect(this.halt.signal);
    } catch (error) {
      if (!this.stopping) this.failed(error);
      return false;
    }
    if (this.stopping) {
      stream.on('error', noop);
      stream.destroy();
      return false;
    }
    return new Promise<boolean>((resolve) => this.open(stream, resolve));
  }

  private open(stream: Duplex, finish: (everConnected: boolean) => void): void {
    const onData = (chunk: Uint8Array) => this.onData(session, chunk);
    const onError = (error: Error) => {
      session.error ??= error.message;
      stream.destroy();
    };
    // The device hung up its side: nothing more will come, close ours too.
    const onEnd = () => stream.destroy();
    const onClose = () => void this.closeSession(session);
    const session: Session = {
      stream,
      framer: new StreamFramer(),
      configId: 0,
      connected: false,
      everConnected: false,
      closed: false,
      lastDataAt: 0,
      finish,
      detach: () => {
        stream.off('data', onData);
        stream.off('error', onError);
        stream.off('end', onEnd);
        stream.off('close', onClose);
        // A late error on a stream we dropped must not become an uncaught exception.
        stream.on('error', noop);
      },
    };
    stream.on('data', onData);
    stream.on('error', onError);
    stream.on('end', onEnd);
    stream.on('close', onClose);
    this.session = session;
    void this.beginHandshake(session);
  }

  private async beginHandshake(session: Session): Promise<void> {
    if (this.options.transport.kind === 'serial') {
      try {
        await this.write(session, SERIAL_WAKE);
      } catch {
        return;
      }
      await pause(SERIAL_WAKE_PAUSE_MS);
      if (session.closed) return;
    }
    this.requestConfig(session);
  }

  /** Sends a fresh want_config_id and waits for its config_complete_id (again after a reboot). */
  private requestConfig(session: Session): void {
    let configId: number;
    do configId = randomInt(1, 0xffffffff);
    while (SPECIAL_CONFIG_NONCES.has(configId));
    session.configId = configId;
    session.connected = false;
    clearInterval(session.heartbeatTimer);
    clearTimeout(session.handshakeTimer);
    const timeoutMs = this.options.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS;
    session.handshakeTimer = setTimeout(() => {
      session.error = new HandshakeTimeoutError(timeoutMs).message;
      this.options.log.debug(
        { address: this.options.transport.address, timeoutMs },
        'radio handshake timed out',
      );
      session.stream.destroy();
    }, timeoutMs);
    this.setState('configuring');
    const wantConfig = encodeFrame(
      encodeToRadio(
        create(Mesh.ToRadioSchema, { payloadVariant: { case: 'wantConfigId', value: configId } }),
      ),
    );
    const requestedAt = Date.now();
    const send = () =>
      this.write(session, wantConfig).catch((error: unknown) => {
        this.options.log.debug({ err: error }, 'cannot send want_config_id');
      });
    const retryWhileSilent = () => {
      clearTimeout(session.configRetryTimer);
      session.configRetryTimer = setTimeout(() => {
        if (session.closed || session.connected || session.configId !== configId) return;
        if (session.lastDataAt >= requestedAt) return;
        void send();
        retryWhileSilent();
      }, SILENT_CONFIG_RETRY_MS);
    };
    void send();
    retryWhileSilent();
  }

  private onData(session: Session, chunk: Uint8Array): void {
    if (session.closed) return;
    const receivedAt = Date.now();
    session.lastDataAt = receivedAt;
    clearTimeout(session.answerTimer);
    session.answerTimer = undefined;
    const quietSince = session.unansweredSince;
    session.unansweredSince = undefined;
    if (quietSince !== undefined && receivedAt - quietSince > QUIET_NOTICE_MS && session.connected)
      this.callback('onQuietEnded', () => this.options.onQuietEnded?.(quietSince));
    for (const event of session.framer.push(chunk)) {
      if (session.closed) return;
      if (event.kind === 'frame') this.onFrame(session, event.payload, receivedAt);
      else if (event.kind === 'log') this.callback('onLogLine', () => this.options.onLogLine?.(event.line));
      else this.frameError('frame', event.reason);
    }
  }

  private onFrame(session: Session, payload: Uint8Array, receivedAt: number): void {
    let message: Mesh.FromRadio;
    try {
      message = decodeFromRadio(payload);
    } catch (error) {
      this.frameError('protobuf', `malformed FromRadio (${payload.length} bytes)`, error);
      return;
    }
    const variant = message.payloadVariant;
    if (variant.case === 'myInfo') {
      if (this.nodeNum !== variant.value.myNodeNum) {
        this.nodeNum = variant.value.myNodeNum;
        this.emitStatus();
      }
    } else if (variant.case === 'configCompleteId') {
      if (variant.value === session.configId && !session.connected) this.onConfigured(session);
    } else if (variant.case === 'rebooted') {
      // FromRadio.rebooted: the device restarted under us (serial stays open); its API session is new.
      this.options.log.info(
        { address: this.options.transport.address },
        'radio rebooted; requesting config again',
      );
      this.requestConfig(session);
    }
    this.callback('onFromRadio', () => this.options.onFromRadio(message, receivedAt));
  }

  private onConfigured(session: Session): void {
    clearTimeout(session.handshakeTimer);
    clearTimeout(session.configRetryTimer);
    session.connected = true;
    session.everConnected = true;
    this.lastError = undefined;
    this.consecutiveFailures = 0;
    this.setState('connected');
    this.options.log.debug(
      { address: this.options.transport.address, myNodeNum: this.nodeNum },
      'radio configured',
    );
    session.heartbeatTimer = setInterval(() => {
      const heartbeat = create(Mesh.ToRadioSchema, { payloadVariant: { case: 'heartbeat', value: {} } });
      this.write(session, encodeFrame(encodeToRadio(heartbeat))).catch((error: unknown) => {
        this.options.log.debug({ err: error }, 'cannot send heartbeat');
      });
    }, this.options.heartbeatMs);
  }

  private closeSession(session: Session): Promise<void> {
    const stream = session.stream;
    const closed = stream.closed
      ? Promise.resolve()
      : new Promise<void>((resolve) => stream.once('close', () => resolve()));
    if (session.closed) return closed;
    session.closed = true;
    session.connected = false;
    clearTimeout(session.handshakeTimer);
    clearInterval(session.heartbeatTimer);
    clearTimeout(session.answerTimer);
    clearTimeout(session.configRetryTimer);
    session.detach();
    stream.destroy();
    if (this.session === session) this.session = undefined;
    if (!this.stopping) {
      const reason = session.error ?? 'the device closed the connection';
      if (session.everConnected) {
        this.lastError = reason;
        this.options.log.warn({ address: this.options.transport.address, reason }, 'radio connection lost');
      } else {
        this.failed(reason);
      }
    }
    session.finish(session.everConnected);
    return closed;
  }

  /** Logs a failed attempt: loudly the first time, quietly while the radio stays away. */
  private failed(error: unknown): void {
    this.lastError = error instanceof Error ? error.message : String(error);
    this.consecutiveFailures++;
    const detail = { address: this.options.transport.address, reason: this.lastError };
    if (this.consecutiveFailures === 1) this.options.log.warn(detail, 'cannot reach the radio; retrying');
    else this.options.log.debug({ ...detail, attempts: this.consecutiveFailures }, 'radio still unreachable');
  }

  private async write(session: Session, bytes: Uint8Array): Promise<void> {
    const stream = session.stream;
    if (session.closed || stream.destroyed || !stream.writable) throw new TransportClosedError();
    if (stream.write(bytes)) return;
    // One waiter per stream, however many writers wait for the same drain. No deadline: a dead
    // session ends when its stream closes (TCP keep-alive, the serial port going away).
    session.drained ??= waitForDrain(stream, Number.POSITIVE_INFINITY, {
      closed: () => new TransportClosedError('the radio transport closed before the write drained'),
    }).finally(() => {
      session.drained = undefined;
    });
    return session.drained;
  }

  private frameError(kind: FrameErrorKind, detail: string, error?: unknown): void {
    this.options.log.debug({ kind, detail, err: error }, 'radio frame error');
    this.callback('onFrameError', () => this.options.onFrameError?.(kind, detail));
  }

  private setState(state: RadioLinkState): void {
    if (this.state === state) return;
    this.state = state;
    this.emitStatus();
  }

  private emitStatus(): void {
    this.callback('onStatus', () => this.options.onStatus(this.status));
  }

  /** Owner callbacks run inside stream events: a throw is logged, never propagated. */
  private callback(name: string, fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.options.log.error({ err: error, callback: name }, 'radio link callback threw');
    }
  }
}
