/**
 * `GET {SYNC_API}/downlink`: the one WebSocket a site keeps open to receive commands (docs/sync.md
 * "Pull"; sites sit behind NAT, so they dial out).
 *
 * The upgrade is checked before it is accepted: a site request token for "GET
 * /api/sync/v1/downlink" in `Authorization`, from a registered, unrevoked site, never seen before
 * (its `jti`); otherwise the raw socket gets a plain HTTP 401 / 403 / 409 problem and is closed.
 *
 * Then, on the socket:
 * - first frame `hello` (downlinkHelloSchema), then every command not yet acknowledged, in id
 *   order (a new connection starts over, so what the site did not acknowledge is sent again),
 *   then each new one as the DownlinkQueue's NOTIFY wakes the socket (also re-read on every
 *   heartbeat, in case a notification was lost);
 * - `ack` frames (commandAckSchema) are recorded; anything else is counted and ignored;
 * - a ping every `heartbeatMs`: a peer that missed two pongs is terminated, as is the socket of
 *   a site revoked meanwhile;
 * - a second connection of the same site replaces the first (the old one is closed, 4000).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type RawData, WebSocket, WebSocketServer } from 'ws';
import { bearerToken } from '../../../src/auth/jwt-verifier.js';
import { problemTitle } from '../../../src/http/problem.js';
import type { Logger } from '../../../src/log.js';
import { commandAckSchema, type DownlinkHello, SYNC_API } from '../../protocol.js';
import { claimedSiteId, SiteAuthError, verifySiteRequest } from '../../signing.js';
import type { DownlinkQueue } from '../downlink-queue.js';
import type { SiteRegistry } from '../sites.js';
import { SYNC_PROBLEM_PREFIX } from './sync-routes.js';

export const DOWNLINK_PATH = `${SYNC_API}/downlink`;
export const DEFAULT_HEARTBEAT_MS = 30_000;
/** Commands read from the queue per page. */
const PAGE = 100;
/** Most commands sent and not yet acknowledged on one connection. */
export const MAX_IN_FLIGHT = 1_000;
/** Largest frame a site may send (acks are a few dozen bytes). */
const MAX_FRAME_BYTES = 64 * 1024;
/** Close codes (4000–4999 are the application's). */
export const CLOSE_REPLACED = 4000;
export const CLOSE_REVOKED = 4003;
const CLOSE_GOING_AWAY = 1001;

export interface DownlinkSocketDeps {
  sites: SiteRegistry;
  queue: DownlinkQueue;
  log?: Logger;
  heartbeatMs?: number;
  /** Most commands sent and not yet acknowledged on one connection (default MAX_IN_FLIGHT). */
  maxInFlight?: number;
  now?: () => number;
}

export interface DownlinkStats {
  /** Sites with a socket open now. */
  connectedSites: string[];
  /** Frames from sites that were not a valid ack (ignored). */
  badFrames: number;
  /** Commands sent (including repeats on new connections). */
  commandsSent: number;
  /** Acks processed (recorded, or found already recorded). */
  acks: number;
}

export type DownlinkUpgradeHandler = ((req: IncomingMessage, socket: Duplex, head: Buffer) => void) & {
  readonly stats: () => DownlinkStats;
  /** Closes every site's socket (the upstream is stopping); sites reconnect elsewhere. */
  readonly closeAll: () => void;
};

/** Writes an HTTP problem on a socket that was never upgraded, then closes it. */
function refuseUpgrade(socket: Duplex, status: number, reason: string, detail: string, nowMs: number): void {
  const body = JSON.stringify({
    type: `${SYNC_PROBLEM_PREFIX}${reason}`,
    title: problemTitle(status),
    status,
    detail,
    reason,
    server_time: nowMs,
  });
  const head = [
    `HTTP/1.1 ${status} ${problemTitle(status)}`,
    'Content-Type: application/problem+json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...(status === 401 ? ['WWW-Authenticate: Bearer realm="meshhub-upstream"'] : []),
  ];
  if (socket.writable) socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
  else socket.destroy();
}

export function downlinkUpgradeHandler(deps: DownlinkSocketDeps): DownlinkUpgradeHandler {
  const { sites, queue, log } = deps;
  const now = deps.now ?? Date.now;
  const heartbeatMs = deps.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  const maxInFlight = deps.maxInFlight ?? MAX_IN_FLIGHT;
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES });
  const sessions = new Map<string, Session>();
  const counters = { badFrames: 0, commandsSent: 0, acks: 0 };

  class Session {
    /**
     * Commands sent on this connection and not acknowledged yet. Not a high-water mark: ids come
     * from a sequence when the INSERT runs, but transactions commit in any order, so a command
     * with a lower id can become visible after a higher one was sent.
     */
    private readonly inFlight = new Set<number>();
    private pumping = false;
    private again = false;
    private missedPongs = 0;
    private closed = false;
    private acking: Promise<void> = Promise.resolve();
    private readonly unsubscribe: () => void;
    private readonly heartbeat: NodeJS.Timeout;

    constructor(
      readonly siteId: string,
      readonly ws: WebSocket,
    ) {
      this.unsubscribe = queue.subscribe(siteId, () => this.pump());
      this.heartbeat = setInterval(() => this.beat(), heartbeatMs);
      ws.on('pong', () => {
        this.missedPongs = 0;
      });
      ws.on('message', (data, isBinary) => this.onFrame(data, isBinary));
      ws.on('close', (code) => {
        // The site said it is stopping (sync/site/downlink-client.ts closes with 1001 then); a
        // close we started (replaced, revoked, the upstream stopping) has ended the session first.
        if (!this.closed && code === CLOSE_GOING_AWAY) {
          sites
            .markStopped(siteId)
            .catch((error: unknown) => log?.debug({ err: error, siteId }, 'marking a site stopped failed'));
        }
        this.end();
      });
      ws.on('error', (error) => {
        log?.debug({ err: error, siteId }, 'downlink socket error');
        ws.terminate();
      });
    }

    start(): void {
      const hello: DownlinkHello = { type: 'hello', site_id: this.siteId, server_time: now() };
      this.ws.send(JSON.stringify(hello));
      this.pump();
    }

    /** Sends what is pending and not sent on this connection yet; one pass at a time, repeated when woken meanwhile. */
    pump(): void {
      if (this.closed) return;
      if (this.pumping) {
        this.again = true;
        return;
      }
      this.pumping = true;
      this.drain()
        .catch((error: unknown) =>
          log?.warn({ err: error, siteId: this.siteId }, 'sending downlink commands failed'),
        )
        .finally(() => {
          this.pumping = false;
          if (this.again) {
            this.again = false;
            this.pump();
          }
        });
    }

    private async drain(): Promise<void> {
      for (;;) {
        this.again = false;
        // Flow control: a site that does not acknowledge is not sent an unbounded backlog.
        const room = maxInFlight - this.inFlight.size;
        if (room <= 0) return;
        const commands = await queue.pending(this.siteId, 0, Math.min(PAGE, room), [...this.inFlight]);
        if (this.closed || commands.length === 0) return;
        const ids = commands.map((c) => c.id);
        // In flight before the first frame goes out: the site's ack may come back before our send callback.
        for (const id of ids) this.inFlight.add(id);
        try {
          // Counted before sending, so the count is there by the time the site sees the command.
          await queue.markSent(this.siteId, ids);
          await Promise.all(
            commands.map(
              (command) =>
                new Promise<void>((resolve, reject) =>
                  this.ws.send(JSON.stringify(command), (error) => (error ? reject(error) : resolve())),
                ),
            ),
          );
        } catch (error) {
          // Not sent: the next pass (a wake-up or the heartbeat) tries them again.
          for (const id of ids) this.inFlight.delete(id);
          throw error;
        }
        counters.commandsSent += commands.length;
        if (commands.length < Math.min(PAGE, room) && !this.again) return;
      }
    }

    private onFrame(data: RawData, isBinary: boolean): void {
      let parsed: unknown;
      try {
        parsed = isBinary ? undefined : JSON.parse(rawText(data));
      } catch {
        parsed = undefined;
      }
      const ack = commandAckSchema.safeParse(parsed);
      if (!ack.success) {
        counters.badFrames++;
        log?.debug({ siteId: this.siteId }, 'ignored a downlink frame that is not an ack');
        return;
      }
      // One at a time, in the order the site sent them: the first ack of a command is the one kept.
      this.acking = this.acking
        .then(() => queue.acknowledge(this.siteId, ack.data))
        .then(
          () => {
            counters.acks++;
            // Room for more when the window was full.
            if (this.inFlight.delete(ack.data.id) && this.inFlight.size === maxInFlight - 1) this.pump();
          },
          (error: unknown) =>
            log?.warn(
              { err: error, siteId: this.siteId, id: ack.data.id },
              'recording a downlink ack failed',
            ),
        );
    }

    private beat(): void {
      if (this.missedPongs >= 2) {
        log?.info({ siteId: this.siteId }, 'downlink peer missed two pongs; closing');
        this.ws.terminate();
        return;
      }
      // ping() throws on a socket that is already closing.
      if (this.ws.readyState !== WebSocket.OPEN) return;
      this.missedPongs++;
      this.ws.ping();
      sites
        .keysFor(this.siteId)
        .then((site) => {
          if (!site || site.revoked) this.ws.close(CLOSE_REVOKED, 'site revoked');
          else this.pump();
        })
        .catch((error: unknown) =>
          log?.debug({ err: error, siteId: this.siteId }, 'downlink heartbeat check failed'),
        );
    }

    end(): void {
      if (this.closed) return;
      this.closed = true;
      clearInterval(this.heartbeat);
      this.unsubscribe();
      if (sessions.get(this.siteId) === this) sessions.delete(this.siteId);
    }
  }

  async function authorize(req: IncomingMessage): Promise<string> {
    const token = bearerToken(req.headers.authorization);
    if (!token)
      throw new SiteAuthError('unknown_site', 'a site request token (Authorization: Bearer) is required');
    const siteId = claimedSiteId(token);
    const keys = siteId === undefined ? undefined : await sites.keysFor(siteId);
    const verified = await verifySiteRequest(token, keys, {
      method: 'GET',
      path: DOWNLINK_PATH,
      nowMs: now(),
    });
    if (!(await sites.rememberRequest(verified.siteId, verified.jti, verified.expiresAt))) {
      throw new ReplayedRequest();
    }
    return verified.siteId;
  }

  function accept(siteId: string, req: IncomingMessage, socket: Duplex, head: Buffer): void {
    wss.handleUpgrade(req, socket, head, (ws) => {
      const previous = sessions.get(siteId);
      const session = new Session(siteId, ws);
      sessions.set(siteId, session);
      if (previous) {
        previous.end();
        previous.ws.close(CLOSE_REPLACED, 'replaced by a newer connection');
      }
      log?.info({ siteId }, 'site downlink connected');
      sites
        .touch(siteId)
        .catch((error: unknown) => log?.debug({ err: error, siteId }, 'touching a site failed'));
      session.start();
    });
  }

  const handler = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    // A peer that drops the socket while we check its token must not crash the process.
    const onEarlyError = () => socket.destroy();
    socket.on('error', onEarlyError);
    const path = (req.url ?? '').split('?')[0];
    if (path !== DOWNLINK_PATH) {
      refuseUpgrade(socket, 404, 'not_found', `no WebSocket endpoint at ${path}`, now());
      return;
    }
    authorize(req).then(
      (siteId) => {
        socket.off('error', onEarlyError);
        if (socket.destroyed) return;
        accept(siteId, req, socket, head);
      },
      (error: unknown) => {
        if (error instanceof ReplayedRequest) {
          refuseUpgrade(socket, 409, 'replayed_request', 'this signed request was received before', now());
        } else if (error instanceof SiteAuthError) {
          log?.info({ reason: error.reason }, `downlink refused: ${error.message}`);
          const status = error.reason === 'revoked_site' ? 403 : 401;
          refuseUpgrade(socket, status, error.reason, error.message, now());
        } else {
          log?.error({ err: error }, 'checking a downlink request failed');
          refuseUpgrade(
            socket,
            503,
            'unavailable',
            'the upstream cannot check the request now; retry later',
            now(),
          );
        }
      },
    );
  };

  return Object.assign(handler, {
    stats: (): DownlinkStats => ({ connectedSites: [...sessions.keys()], ...counters }),
    closeAll: () => {
      for (const session of [...sessions.values()]) {
        session.end();
        session.ws.close(CLOSE_GOING_AWAY, 'the upstream is stopping');
      }
    },
  });
}

class ReplayedRequest extends Error {}

function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString('utf8');
  return data.toString('utf8');
}
