/**
 * One dedicated PostgreSQL connection that LISTENs on some channels and comes back by itself:
 * when it fails, ends or is dropped (PostgreSQL restarted, the backend terminated, a caller that
 * stopped trusting it), it is opened again after a backoff with jitter, until `stop()`. Used by
 * the downlink queue (downlink-queue.ts) and the history listener (history-changes.ts), each with
 * a connection of its own.
 *
 * Notifications sent while no connection listened are lost: `onUp` tells the owner each time a
 * connection starts listening (with how many have so far), so it can catch up by other means.
 */
import pg from 'pg';
import { equalJitter, exponentialDelay } from '../../../src/kernel/backoff.js';
import type { Logger } from '../../../src/log.js';

export interface ListeningConnectionOptions {
  databaseUrl: string;
  /** `application_name` of the connection (what `pg_stat_activity` shows). */
  applicationName: string;
  channels: readonly string[];
  /** What it is, in log lines: "the downlink listening connection failed". */
  what: string;
  log?: Logger | undefined;
  /** First and longest wait before the connection is opened again (ms). */
  reconnectMs?: { min: number; max: number } | undefined;
  /** Runs on a new connection before its LISTEN (settings, the time listening starts). */
  beforeListen?: (client: pg.Client) => Promise<void> | void;
  onNotification: (message: pg.Notification, client: pg.Client) => void;
  /** The connection listens (the `connects`-th so far). */
  onUp?: (client: pg.Client, connects: number) => void;
  /** The connection is gone (failed, ended, dropped or stopped). */
  onDown?: () => void;
}

export class ListeningConnection {
  private running = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  /** The connection while it listens. */
  client: pg.Client | undefined;
  /** Its backend's pid while it listens (diagnostics, tests). */
  pid: number | undefined;
  /** Times a connection started listening. */
  connects = 0;

  constructor(private readonly options: ListeningConnectionOptions) {}

  /**
   * Opens the connection. `retryFirst`: a first attempt that fails is retried in the background
   * (logged) instead of thrown.
   */
  async start({ retryFirst = false }: { retryFirst?: boolean } = {}): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await this.open();
    } catch (error) {
      if (!retryFirst) {
        this.running = false;
        throw error;
      }
      this.options.log?.warn({ err: error }, `${this.options.what} could not be opened`);
      this.scheduleReopen();
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const client = this.client;
    this.down();
    await client?.end().catch(() => {});
  }

  /** Gives up on `client` (if it is still the current one) and opens another after a backoff. */
  drop(client: pg.Client): void {
    if (this.client !== client) return;
    this.down();
    client.end().catch(() => {});
    this.scheduleReopen();
  }

  private async open(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.options.databaseUrl,
      application_name: this.options.applicationName,
      connectionTimeoutMillis: 10_000,
      keepAlive: true,
    });
    client.on('notification', (message) => {
      if (client === this.client) this.options.onNotification(message, client);
    });
    client.on('error', (error) => {
      this.options.log?.warn({ err: error }, `${this.options.what} failed`);
      this.drop(client);
    });
    client.on('end', () => this.drop(client));
    try {
      await client.connect();
      await this.options.beforeListen?.(client);
      await client.query(this.options.channels.map((c) => `LISTEN ${c}`).join('; '));
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      if (!this.running) {
        client.removeAllListeners('end');
        await client.end().catch(() => {});
        return;
      }
      this.client = client;
      this.pid = rows[0]?.pid;
      this.failures = 0;
      this.connects++;
    } catch (error) {
      client.removeAllListeners('end');
      await client.end().catch(() => {});
      throw error;
    }
    this.options.onUp?.(client, this.connects);
  }

  private down(): void {
    const was = this.client;
    this.client = undefined;
    this.pid = undefined;
    if (was) this.options.onDown?.();
  }

  private scheduleReopen(): void {
    if (!this.running || this.retryTimer) return;
    const { min, max } = this.options.reconnectMs ?? { min: 500, max: 30_000 };
    const delay = equalJitter(exponentialDelay(this.failures, min, max));
    this.failures++;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (!this.running) return;
      this.open().catch((error: unknown) => {
        this.options.log?.warn({ err: error }, `reopening ${this.options.what} failed`);
        this.scheduleReopen();
      });
    }, delay);
    this.retryTimer.unref();
  }
}
