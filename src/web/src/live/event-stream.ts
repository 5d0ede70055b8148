/**
 * An EventSource that keeps itself connected. The browser's own reconnection gives up for
 * good on an HTTP error (a 503 while the hub restarts) and cannot fetch a new stream ticket,
 * so this closes and reopens it with growing delays instead, and treats a stream that has
 * been silent past `silenceMs` (the hub pings every 15 s) as dead: Wi-Fi that drops without
 * closing the TCP connection would otherwise look connected forever.
 */
import { reconnectDelayMs } from '../lib/backoff.js';

export type StreamState = 'connecting' | 'open' | 'reconnecting' | 'closed';

export interface ReconnectingStreamOptions {
  /** The URL to open; async so a fresh ticket can be fetched for each attempt. */
  url: () => Promise<string>;
  events: Record<string, (data: unknown) => void>;
  onState: (state: StreamState) => void;
  /** Called on each successful (re)connection, before any event of it. */
  onOpen?: () => void;
  /** A URL that cannot be had (e.g. the ticket request failed): retried like a failed connection. */
  onUrlError?: (error: unknown) => void;
  silenceMs?: number;
}

export class ReconnectingStream {
  private source: EventSource | undefined;
  private attempt = 0;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private watchdog: ReturnType<typeof setInterval> | undefined;
  private lastMessageAt = 0;
  private stopped = false;

  constructor(private readonly options: ReconnectingStreamOptions) {}

  start(): void {
    this.stopped = false;
    this.options.onState('connecting');
    void this.connect();
    const silence = this.options.silenceMs ?? 45_000;
    this.watchdog = setInterval(
      () => {
        if (this.source?.readyState === EventSource.OPEN && Date.now() - this.lastMessageAt > silence)
          this.retry();
      },
      Math.min(silence, 5_000),
    );
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.watchdog);
    this.source?.close();
    this.source = undefined;
    this.options.onState('closed');
  }

  /** Reconnect now (e.g. the page became visible again after a long sleep). */
  reconnectNow(): void {
    if (this.stopped) return;
    this.attempt = 0;
    this.retry(0);
  }

  private async connect(): Promise<void> {
    let url: string;
    try {
      url = await this.options.url();
    } catch (error) {
      this.options.onUrlError?.(error);
      if (!this.stopped) this.retry();
      return;
    }
    if (this.stopped) return;
    const source = new EventSource(url);
    this.source = source;
    this.lastMessageAt = Date.now();
    source.onopen = () => {
      this.attempt = 0;
      this.lastMessageAt = Date.now();
      this.options.onState('open');
      this.options.onOpen?.();
    };
    source.onerror = () => {
      if (this.source === source) this.retry();
    };
    for (const [event, handler] of Object.entries(this.options.events)) {
      source.addEventListener(event, (message) => {
        this.lastMessageAt = Date.now();
        let data: unknown;
        try {
          data = JSON.parse((message as MessageEvent<string>).data);
        } catch {
          return;
        }
        handler(data);
      });
    }
  }

  private retry(delayMs = reconnectDelayMs(this.attempt)): void {
    this.source?.close();
    this.source = undefined;
    clearTimeout(this.retryTimer);
    if (this.stopped) return;
    this.options.onState('reconnecting');
    this.attempt++;
    this.retryTimer = setTimeout(() => void this.connect(), delayMs);
  }
}
