/**
 * Server-Sent Events to every open dashboard (WHATWG HTML "Server-sent events"). Each event is
 * encoded once and queued on every client's stream; the HTTP server writes a stream only as
 * fast as its socket drains, so a client's queue is exactly what it has not read yet. A client
 * whose queue passes `maxBufferedBytes` (a phone that went to sleep on a slow Wi-Fi) is cut
 * off rather than held in memory: its EventSource reconnects and the dashboard fetches a fresh
 * snapshot. A `ping` event every `heartbeatMs` keeps proxies from closing an idle stream and
 * lets the browser notice a dead connection (EventSource does not expose comment lines).
 */
import { ProblemError } from '../http/problem.js';

export interface LiveStreamLimits {
  /** Open streams at most; the next one gets 503 with Retry-After. */
  maxClients: number;
  /**
   * Open streams of one client address at most (LIVE_MAX_STREAMS_PER_ADDRESS); the next one
   * from that address gets 429 with Retry-After, so one address cannot take every slot.
   */
  maxClientsPerAddress: number;
  heartbeatMs: number;
  /** Bytes a client may leave unread before it is cut off. */
  maxBufferedBytes: number;
  /** The reconnection delay the stream asks browsers to use (SSE `retry:`). */
  retryMs: number;
}

export const DEFAULT_LIVE_LIMITS: LiveStreamLimits = {
  maxClients: 100,
  maxClientsPerAddress: 8,
  heartbeatMs: 15_000,
  maxBufferedBytes: 1024 * 1024,
  retryMs: 3_000,
};

interface LiveClient {
  controller: ReadableStreamDefaultController<Uint8Array>;
  /** Drops the connection at once (the HTTP response's socket), when the server gives us one. */
  abort: (() => void) | undefined;
  /** The client's address, when known (counted against maxClientsPerAddress). */
  address: string | undefined;
}

const encoder = new TextEncoder();

/** One SSE event; `data` must be one line (JSON.stringify never emits a raw newline). */
/** The headers of a Server-Sent Events answer; nginx and similar proxies buffer responses unless told not to. */
export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
};

export function sseEvent(event: string, data: string): Uint8Array {
  return encoder.encode(`event: ${event}\ndata: ${data}\n\n`);
}

export class LiveBroadcaster {
  readonly limits: LiveStreamLimits;
  private readonly clients = new Set<LiveClient>();
  /** Open streams by client address. */
  private readonly perAddress = new Map<string, number>();
  private heartbeat: NodeJS.Timeout | undefined;
  /** Clients cut off for not reading (for /health and the tests). */
  droppedSlowClients = 0;

  constructor(limits: Partial<LiveStreamLimits> = {}) {
    this.limits = { ...DEFAULT_LIVE_LIMITS, ...limits };
  }

  get clientCount(): number {
    return this.clients.size;
  }

  /** Open streams of one client address. */
  clientsOf(address: string): number {
    return this.perAddress.get(address) ?? 0;
  }

  /**
   * A new stream that starts with `first` (e.g. the hub's hello). Throws a 429 problem when
   * `address` already holds `maxClientsPerAddress` streams, a 503 when `maxClients` are open.
   */
  open(first: () => Uint8Array[], abort?: () => void, address?: string): ReadableStream<Uint8Array> {
    if (address !== undefined && this.clientsOf(address) >= this.limits.maxClientsPerAddress) {
      throw new ProblemError(
        429,
        `at most ${this.limits.maxClientsPerAddress} live streams per client address; close one (another tab or window) first`,
        { headers: { 'retry-after': String(Math.ceil(this.limits.retryMs / 1000) * 10) } },
      );
    }
    if (this.clients.size >= this.limits.maxClients) {
      throw new ProblemError(503, 'too many live dashboards are open; try again in a moment', {
        headers: { 'retry-after': String(Math.ceil(this.limits.retryMs / 1000) * 10) },
      });
    }
    let client: LiveClient | undefined;
    return new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          client = { controller, abort, address };
          this.clients.add(client);
          if (address !== undefined) this.perAddress.set(address, this.clientsOf(address) + 1);
          this.startHeartbeat();
          controller.enqueue(encoder.encode(`retry: ${this.limits.retryMs}\n\n`));
          for (const chunk of first()) controller.enqueue(chunk);
        },
        cancel: () => {
          if (client) this.remove(client);
        },
      },
      new ByteLengthQueuingStrategy({ highWaterMark: 0 }),
    );
  }

  broadcast(event: string, data: string): void {
    if (this.clients.size === 0) return;
    const chunk = sseEvent(event, data);
    for (const client of this.clients) this.send(client, chunk);
  }

  /** Ends every stream (the hub is stopping). */
  closeAll(): void {
    for (const client of [...this.clients]) {
      this.remove(client);
      try {
        client.controller.close();
      } catch {
        // already closed by the reader
      }
    }
  }

  private send(client: LiveClient, chunk: Uint8Array): void {
    try {
      client.controller.enqueue(chunk);
    } catch {
      this.remove(client);
      return;
    }
    // desiredSize = highWaterMark (0) − bytes queued and not yet taken by the socket writer.
    const backlog = -(client.controller.desiredSize ?? 0);
    if (backlog > this.limits.maxBufferedBytes) {
      this.droppedSlowClients++;
      this.remove(client);
      // Drop the socket, queue and all (close() would still deliver the queue); without one,
      // error() discards the queue and the server ends the response.
      if (client.abort) client.abort();
      else client.controller.error(new Error('live stream client too slow'));
    }
  }

  private remove(client: LiveClient): void {
    if (!this.clients.delete(client)) return;
    if (client.address !== undefined) {
      const left = this.clientsOf(client.address) - 1;
      if (left > 0) this.perAddress.set(client.address, left);
      else this.perAddress.delete(client.address);
    }
    if (this.clients.size === 0 && this.heartbeat) {
      clearInterval(this.heartbeat);
      this.heartbeat = undefined;
    }
  }

  private startHeartbeat(): void {
    if (this.heartbeat) return;
    this.heartbeat = setInterval(() => {
      this.broadcast('ping', JSON.stringify(new Date().toISOString()));
    }, this.limits.heartbeatMs);
    this.heartbeat.unref?.();
  }
}
