/**
 * Which sites' history changed, told to every upstream process as it happens, so the history
 * caches (history-cache.ts) drop what a batch applied by ANY process changed without asking
 * PostgreSQL on every request (UPSTREAM_HISTORY_LISTEN, on by default).
 *
 * - Every batch that changes rollup buckets NOTIFYs `meshhub_history` with "<site> <oldest changed
 *   ms>" in its own transaction (`notifyHistoryChanged`, called by batch-apply.ts after the
 *   batch's last statement), so the notification goes out exactly when the batch commits, and
 *   never for a batch rolled back. A statement of the session, not a trigger: on Citus a trigger
 *   would fire on the worker holding the shard, and notifications are local to a node, while
 *   the listeners connect to the coordinator.
 * - Every process LISTENs on one dedicated connection (`HistoryChangeListener`). PostgreSQL
 *   delivers a connection's notifications in commit order and loses none while the connection
 *   lasts, so "listening since epoch e" means: every change committed since then has been (or
 *   is being) delivered, in order.
 * - The listener pings itself (a NOTIFY on a channel of its own, every `pingMs`): the echo of a
 *   ping sent at time s proves every change committed before s was delivered before it. While no
 *   echo came for `maxSilenceMs` (a connection that hangs without failing, a PostgreSQL too busy
 *   to deliver), or while the connection is down or reconnecting, `liveEpoch()` is undefined and
 *   the caches check with PostgreSQL on every request. A new connection is a new epoch: what was
 *   notified while none listened is lost, so each site is checked against PostgreSQL once again
 *   before its cache is trusted.
 *
 * What this gives up: a request that reaches a process between a batch's commit and the arrival
 * of its notification at that process is answered as of just before that batch. That window is
 * the notification's delivery time (p99 11 ms, once 152 ms, on the loaded 2-core bench VM) and
 * never more than `maxSilenceMs` (3 s): history reaches the upstream seconds after the site
 * stored it anyway (SYNC_READINGS_DEBOUNCE). An operator who wants every answer as of its
 * request sets UPSTREAM_HISTORY_LISTEN=false: one PostgreSQL round trip more per request.
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from '../../src/log.js';
import { ListeningConnection } from './db/listening-connection.js';
import { APPLICATION_NAME } from './db/pool.js';

export const HISTORY_CHANNEL = 'meshhub_history';

/**
 * In a batch's transaction, once its rollups are written: tells every process's history cache
 * that the site's buckets from `changedFrom` (ms) on changed.
 */
export async function notifyHistoryChanged(
  client: pg.ClientBase,
  siteId: string,
  changedFrom: number,
): Promise<void> {
  await client.query({
    name: 'meshhub-history-notify',
    text: 'SELECT pg_notify($1, $2)',
    values: [HISTORY_CHANNEL, `${siteId} ${changedFrom}`],
  });
}

/** What a history cache needs of the listener. */
export interface HistoryChangeFeed {
  /**
   * The current connection's epoch while it provably delivers every change (listening, and a
   * ping echoed within the allowed silence); undefined otherwise.
   */
  liveEpoch(): number | undefined;
  /** Calls `onChange` for every change notified, in commit order; returns the unsubscribe. */
  subscribe(onChange: (siteId: string, from: number) => void): () => void;
}

export interface HistoryChangeListenerOptions {
  log?: Logger;
  now?: () => number;
  /** How often the listener pings itself (ms). */
  pingMs?: number;
  /** Longest time since the last echoed ping was sent for the feed to count as live (ms). */
  maxSilenceMs?: number;
  /** No echo for this long: the connection is dropped and opened again (ms). */
  deadAfterMs?: number;
  /** First and longest wait before the connection is opened again (ms). */
  reconnectMs?: { min: number; max: number };
}

export class HistoryChangeListener implements HistoryChangeFeed {
  private readonly now: () => number;
  private readonly pingMs: number;
  private readonly maxSilenceMs: number;
  private readonly deadAfterMs: number;
  /** Pings go on a channel of this listener's own: other processes never see them. */
  private readonly pingChannel = `${HISTORY_CHANNEL}_ping_${randomBytes(6).toString('hex')}`;
  private readonly subscribers = new Set<(siteId: string, from: number) => void>();
  private readonly connection: ListeningConnection;
  private pingTimer: NodeJS.Timeout | undefined;
  private epoch = 0;
  /** Pings sent on the current connection and not echoed yet: number → time sent. */
  private readonly pings = new Map<number, number>();
  private pingCount = 0;
  /** When the newest connection's LISTEN was sent: every change committed after it is delivered. */
  private listenedFrom = 0;
  /** Every change committed before this time (ms) has been delivered; undefined while down. */
  private confirmedAt: number | undefined;

  constructor(
    databaseUrl: string,
    private readonly options: HistoryChangeListenerOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.pingMs = options.pingMs ?? 1_000;
    this.maxSilenceMs = options.maxSilenceMs ?? 3 * this.pingMs;
    this.deadAfterMs = options.deadAfterMs ?? 10 * this.pingMs;
    this.connection = new ListeningConnection({
      databaseUrl,
      applicationName: `${APPLICATION_NAME}-history`,
      channels: [HISTORY_CHANNEL, this.pingChannel],
      what: 'the history listening connection',
      log: options.log,
      reconnectMs: options.reconnectMs,
      beforeListen: async (client) => {
        // The pings commit a transaction each: they need not wait for the WAL on disk.
        await client.query('SET synchronous_commit = off');
        this.listenedFrom = this.now();
      },
      onNotification: (message, client) => this.heard(client, message),
      onUp: (client) => {
        this.epoch++;
        this.pings.clear();
        this.confirmedAt = this.listenedFrom;
        this.pingTimer = setInterval(() => this.ping(client), this.pingMs);
        this.pingTimer.unref();
      },
      onDown: () => {
        clearInterval(this.pingTimer);
        this.pingTimer = undefined;
        this.confirmedAt = undefined;
        this.pings.clear();
      },
    });
  }

  /** Times the connection was (re)opened (tests, diagnostics). */
  get connects(): number {
    return this.connection.connects;
  }

  /** The listening backend's pid while connected (tests: to cut the connection). */
  get backendPid(): number | undefined {
    return this.connection.pid;
  }

  liveEpoch(): number | undefined {
    if (this.connection.client === undefined || this.confirmedAt === undefined) return undefined;
    return this.now() - this.confirmedAt <= this.maxSilenceMs ? this.epoch : undefined;
  }

  subscribe(onChange: (siteId: string, from: number) => void): () => void {
    this.subscribers.add(onChange);
    return () => this.subscribers.delete(onChange);
  }

  /** Opens the connection. A first attempt that fails is retried in the background, not thrown:
   * until it listens, the caches check with PostgreSQL on every request. */
  start(): Promise<void> {
    return this.connection.start({ retryFirst: true });
  }

  stop(): Promise<void> {
    return this.connection.stop();
  }

  private heard(client: pg.Client, message: pg.Notification): void {
    if (message.channel === this.pingChannel) {
      const sentAt = this.pings.get(Number(message.payload));
      if (sentAt === undefined) return;
      // Pings echo in order: the ones before it can no longer come (or came).
      for (const n of this.pings.keys()) {
        if (n > Number(message.payload)) break;
        this.pings.delete(n);
      }
      if (this.confirmedAt === undefined || sentAt > this.confirmedAt) this.confirmedAt = sentAt;
      return;
    }
    if (message.channel !== HISTORY_CHANNEL || !message.payload) return;
    const space = message.payload.lastIndexOf(' ');
    const siteId = message.payload.slice(0, space);
    const from = Number(message.payload.slice(space + 1));
    if (space <= 0 || !Number.isFinite(from)) {
      // Not ours to read: this connection can no longer say what changed.
      this.options.log?.warn({ payload: message.payload }, 'an unreadable history notification');
      this.connection.drop(client);
      return;
    }
    for (const onChange of this.subscribers) onChange(siteId, from);
  }

  private ping(client: pg.Client): void {
    if (client !== this.connection.client) return;
    const oldest = this.pings.values().next().value;
    if (oldest !== undefined && this.now() - oldest > this.deadAfterMs) {
      this.options.log?.warn('the history listening connection stopped answering; opening it again');
      this.connection.drop(client);
      return;
    }
    const n = ++this.pingCount;
    this.pings.set(n, this.now());
    client.query('SELECT pg_notify($1, $2)', [this.pingChannel, String(n)]).catch(() => {
      // The connection's own error/end events take it down.
    });
  }
}
