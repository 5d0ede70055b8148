/**
 * The one long-lived connection a site opens to its upstream (docs/sync.md "Pull"): sites sit
 * behind NAT, so the upstream cannot call them; it answers on this WebSocket instead.
 *
 * `GET {upstream}/api/sync/v1/downlink` (ws:// for http, wss:// for https), with a site request
 * token in `Authorization` (signing.ts, `req: "GET /api/sync/v1/downlink"`). The upstream's
 * first frame is a hello (its view of the site id and its clock); then command frames, each
 * applied once (downlink-apply.ts), its bus events emitted after the commit, and answered with
 * an ack frame. Frames that are not JSON or not a command are ignored and counted.
 *
 * Liveness: a ping every HEARTBEAT_MS; two pings without a pong and the socket is terminated.
 * Any close is followed by a reconnect after a backoff with full jitter (1 s … SYNC_RETRY_MAX),
 * reset once a connection got its hello. A refused upgrade whose `Date` header shows the site
 * clock is off corrects the clock (the push side shares it) before the next try.
 */
import { WebSocket } from 'ws';
import type { HubBus } from '../../src/domain/events.js';
import { type AddressPolicy, guardedSocketConnect } from '../../src/http/guarded-fetch.js';
import { exponentialDelay, fullJitter } from '../../src/kernel/backoff.js';
import type { Logger } from '../../src/log.js';
import { downlinkHelloSchema, SYNC_API } from '../protocol.js';
import { type ClaimsSigner, signSiteRequest } from '../signing.js';
import type { DownlinkApplier } from './downlink-apply.js';
import type { SyncMetrics } from './metrics.js';
import { upstreamEndpoint } from './settings.js';

export type DownlinkState = 'connecting' | 'connected' | 'disconnected' | 'stopped';

/** The site's clock corrected by what the upstream said its time is (push-actor.ts SyncClock). */
export interface CorrectedClock {
  /** The corrected time: what requests are signed with. */
  now(): number;
  /** The site's own clock, uncorrected: what `correct` measures against. */
  local(): number;
  /**
   * The upstream's time as a refusal or a greeting told it (between `sentAt` and `receivedAt`,
   * local ms): adopted when the clock is off by more than the tokens tolerate. True when it was.
   */
  correct(serverTime: number, sentAt: number, receivedAt: number): boolean;
}

/**
 * The upstream's clock from a refusal: its problem's `server_time`, else the HTTP `Date` header
 * (whole seconds: the middle of that second).
 */
export function serverTimeOf(problem: unknown, dateHeader: string | null | undefined): number | undefined {
  const fromBody = isObject(problem) ? problem.server_time : undefined;
  if (typeof fromBody === 'number' && Number.isFinite(fromBody)) return fromBody;
  const fromHeader = dateHeader ? Date.parse(dateHeader) : Number.NaN;
  return Number.isNaN(fromHeader) ? undefined : fromHeader + 500;
}

export interface DownlinkClientDeps {
  upstream: URL;
  siteId: string;
  signer: ClaimsSigner;
  clock: CorrectedClock;
  applier: DownlinkApplier;
  bus: HubBus;
  metrics: SyncMetrics;
  log: Logger;
  retryMaxMs: number;
  /**
   * Where the socket may connect (src/http/guarded-fetch.ts), checked on every connection.
   * Default: public addresses and loopback.
   */
  addressPolicy?: AddressPolicy;
  /** Called on every state change (the actor reports it in /health and persists it). */
  onState?: (state: DownlinkState) => void;
  /** Called after a command was applied (what it stored waits in the outbox now). */
  onApplied?: () => void;
  heartbeatMs?: number;
  /** Bound on the WebSocket handshake. */
  handshakeTimeoutMs?: number;
}

export const DOWNLINK_PATH = `${SYNC_API}/downlink`;
const HEARTBEAT_MS = 15_000;
const MISSED_PONGS_LIMIT = 2;
const MAX_FRAME_BYTES = 4 * 1024 * 1024;
const RETRY_MIN_MS = 1_000;
const MAX_PROBLEM_BYTES = 8 * 1024;

/** The downlink's ws:// or wss:// URL for an upstream base URL. */
export function downlinkUrl(upstream: URL): URL {
  const url = upstreamEndpoint(upstream, DOWNLINK_PATH);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return url;
}

/** A delay before try number `failures` (1, 2, …): uniform in [0, min(cap, 1 s · 2^(failures−1))]. */
export function retryDelay(failures: number, capMs: number, random: () => number = Math.random): number {
  return fullJitter(exponentialDelay(failures - 1, RETRY_MIN_MS, capMs), random);
}

export class DownlinkClient {
  private socket: WebSocket | undefined;
  private state: DownlinkState = 'disconnected';
  private running = false;
  private failures = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private missedPongs = 0;
  private lastError: string | undefined;
  /** Whether the current connection already said what went wrong (its first reason stands). */
  private problemNoted = false;
  /** Settles when the current socket has closed (stop waits for it). */
  private closed: Promise<void> = Promise.resolve();

  constructor(private readonly deps: DownlinkClientDeps) {}

  get currentState(): DownlinkState {
    return this.state;
  }

  get lastProblem(): string | undefined {
    return this.lastError;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.failures = 0;
    void this.connect();
  }

  /** Closes the connection and stops reconnecting; resolves once the socket is closed. */
  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.retryTimer);
    this.stopHeartbeat();
    const socket = this.socket;
    if (socket && socket.readyState !== WebSocket.CLOSED) {
      if (socket.readyState === WebSocket.OPEN) socket.close(1001, 'site stopping');
      else socket.terminate();
      // A peer that does not answer the close frame is cut off.
      const cut = setTimeout(() => socket.terminate(), 1_000);
      await this.closed;
      clearTimeout(cut);
    }
    this.setState('stopped');
  }

  private setState(state: DownlinkState): void {
    if (this.state === state) return;
    this.state = state;
    this.deps.metrics.setDownlinkConnected(state === 'connected');
    this.deps.onState?.(state);
  }

  private async connect(): Promise<void> {
    if (!this.running) return;
    const { deps } = this;
    this.setState('connecting');
    this.problemNoted = false;
    let token: string;
    try {
      token = await signSiteRequest(deps.signer, {
        siteId: deps.siteId,
        method: 'GET',
        // The protocol's path, whatever prefix a reverse proxy in front of the upstream adds.
        path: DOWNLINK_PATH,
        nowMs: deps.clock.now(),
      });
    } catch (error) {
      this.noteProblem(`cannot sign the downlink request: ${(error as Error).message}`);
      this.scheduleReconnect();
      return;
    }
    if (!this.running) return;
    const sentAt = deps.clock.local();
    const url = downlinkUrl(deps.upstream);
    const socket = new WebSocket(url, {
      headers: { authorization: `Bearer ${token}` },
      // The address check at connect time: a name that resolves into the LAN is refused.
      createConnection: guardedSocketConnect(
        deps.addressPolicy ?? { allowLoopback: true },
        url.protocol === 'wss:',
      ),
      handshakeTimeout: deps.handshakeTimeoutMs ?? 15_000,
      maxPayload: MAX_FRAME_BYTES,
      perMessageDeflate: false,
      followRedirects: false,
    });
    this.socket = socket;
    let gotHello = false;
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('unexpected-response', (_request, response) => {
      const receivedAt = deps.clock.local();
      const chunks: Buffer[] = [];
      let size = 0;
      let handled = false;
      const refused = () => {
        if (handled) return;
        handled = true;
        clearTimeout(cut);
        let problem: unknown;
        try {
          problem = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          problem = undefined;
        }
        const serverTime = serverTimeOf(problem, response.headers.date);
        if (serverTime !== undefined) deps.clock.correct(serverTime, sentAt, receivedAt);
        const detail = isObject(problem) && typeof problem.detail === 'string' ? `: ${problem.detail}` : '';
        const problemText = `the upstream refused the downlink (HTTP ${response.statusCode})${detail}`;
        this.noteProblem(problemText);
        deps.log.info({ status: response.statusCode }, problemText);
        socket.terminate();
      };
      // The refusal's problem document is small; a peer that never ends it is cut off.
      const cut = setTimeout(refused, 5_000);
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= MAX_PROBLEM_BYTES) chunks.push(chunk);
      });
      response.once('end', refused);
      response.once('error', refused);
    });
    socket.on('error', (error) => {
      this.noteProblem(error.message);
      deps.log.debug({ err: error }, 'downlink error');
    });
    socket.on('open', () => this.startHeartbeat(socket));
    socket.on('pong', () => {
      this.missedPongs = 0;
    });
    socket.on('message', (data, isBinary) => {
      this.missedPongs = 0;
      const hello = this.onFrame(socket, data, isBinary);
      if (hello && !gotHello) {
        gotHello = true;
        this.failures = 0;
        this.lastError = undefined;
        this.setState('connected');
        deps.log.info({ upstream: deps.upstream.origin }, 'downlink connected');
      }
    });
    socket.on('close', (code, reason) => {
      if (this.socket === socket) this.socket = undefined;
      this.stopHeartbeat();
      if (!this.running) return;
      if (gotHello) {
        deps.log.info({ code, reason: reason.toString() }, 'downlink closed; reconnecting');
        this.noteProblem(`closed by the upstream (${code})`);
      }
      this.scheduleReconnect();
    });
  }

  private noteProblem(problem: string): void {
    if (this.problemNoted) return;
    this.problemNoted = true;
    this.lastError = problem;
  }

  private scheduleReconnect(): void {
    if (!this.running) return;
    this.setState('disconnected');
    this.failures++;
    const delay = retryDelay(this.failures, this.deps.retryMaxMs);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => void this.connect(), delay);
  }

  private startHeartbeat(socket: WebSocket): void {
    this.stopHeartbeat();
    this.missedPongs = 0;
    this.heartbeat = setInterval(() => {
      if (this.missedPongs >= MISSED_PONGS_LIMIT) {
        this.deps.log.warn('downlink missed two pongs; reconnecting');
        this.noteProblem('the upstream stopped answering pings');
        socket.terminate();
        return;
      }
      this.missedPongs++;
      socket.ping();
    }, this.deps.heartbeatMs ?? HEARTBEAT_MS);
  }

  private stopHeartbeat(): void {
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }

  /** Handles one frame; true when it was the upstream's hello. */
  private onFrame(socket: WebSocket, data: WebSocket.RawData, isBinary: boolean): boolean {
    const { deps } = this;
    let frame: unknown;
    try {
      if (isBinary) throw new Error('binary frame');
      frame = JSON.parse(rawText(data));
    } catch {
      deps.metrics.downlinkInvalidFrames.inc();
      return false;
    }
    if (isObject(frame) && frame.type === 'hello') {
      const hello = downlinkHelloSchema.safeParse(frame);
      if (!hello.success) {
        deps.metrics.downlinkInvalidFrames.inc();
        return false;
      }
      if (hello.data.site_id !== deps.siteId) {
        const mismatch = `the upstream greets this site as "${hello.data.site_id}", not "${deps.siteId}"`;
        this.noteProblem(mismatch);
        deps.log.error({ upstreamSiteId: hello.data.site_id, siteId: deps.siteId }, mismatch);
        socket.close(1008, 'site id mismatch');
        return false;
      }
      const at = deps.clock.local();
      deps.clock.correct(hello.data.server_time, at, at);
      return true;
    }
    let applied: ReturnType<DownlinkApplier['apply']>;
    try {
      applied = deps.applier.apply(frame);
    } catch (error) {
      // Nothing was recorded: close so the upstream sends the command again on the next connection.
      deps.log.error({ err: error }, 'downlink command could not be stored; reconnecting');
      socket.close(1011, 'site storage error');
      return false;
    }
    if (!applied) {
      deps.metrics.downlinkInvalidFrames.inc();
      return false;
    }
    for (const change of applied.changes) deps.bus.emit('message.updated', change);
    if (applied.ack.result === 'applied') deps.onApplied?.();
    deps.metrics.commandAnswered(applied.kind, applied.ack);
    if (applied.ack.result === 'rejected') {
      deps.log.warn(
        { command: applied.ack.id, kind: applied.kind, reason: applied.ack.reason },
        'downlink command rejected',
      );
    }
    if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(applied.ack));
    return false;
  }
}

function rawText(data: WebSocket.RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString('utf8');
  return data.toString('utf8');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
