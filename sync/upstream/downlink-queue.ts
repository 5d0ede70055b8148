/**
 * Commands waiting for a site's downlink (docs/sync.md "Pull"): texts from internet subscribers,
 * subscription and user changes, in the `downlink` table until the site acknowledges them.
 *
 * Several upstream processes share the database, and a site's WebSocket is held by one of them.
 * Whoever queues a command (any process) NOTIFYs `meshhub_downlink` with the site id in the same
 * transaction, so the notification goes out at commit; every process LISTENs on one dedicated
 * connection and wakes the socket of that site if it holds it. The listening connection comes
 * back by itself when PostgreSQL restarts, and then wakes every subscriber, since notifications
 * sent while it was away are lost (the socket re-reads what is pending; nothing is lost).
 *
 * Commands are delivered at least once: a command not yet acknowledged is sent again on the next
 * connection, and the site records the ids it applied (a repeat is acknowledged `duplicate`).
 * An acknowledgement is recorded once (the first wins) and then handed to `onAck` (messaging
 * marks the upstream's copy of a rejected text `failed`).
 */
import type pg from 'pg';
import type { Logger } from '../../src/log.js';
import {
  COMMAND_BODIES,
  type CommandAck,
  type CommandBody,
  type CommandKind,
  type DownlinkCommand,
} from '../protocol.js';
import { ListeningConnection } from './db/listening-connection.js';
import { APPLICATION_NAME } from './db/pool.js';

export const DOWNLINK_CHANNEL = 'meshhub_downlink';

/**
 * Queues a command for `siteId` and notifies the process holding its socket. Given a client
 * inside a transaction, both happen at that transaction's commit (a text and its command are
 * stored together). Returns the command id. Throws when `body` is not a valid `kind` body.
 */
export async function enqueueCommand<K extends CommandKind>(
  client: pg.PoolClient | pg.Pool,
  siteId: string,
  kind: K,
  body: CommandBody<K>,
  nowMs: number = Date.now(),
): Promise<number> {
  const valid = COMMAND_BODIES[kind].parse(body);
  const { rows } = await client.query<{ id: number }>(
    'INSERT INTO downlink (site_id, kind, body, created_at) VALUES ($1, $2, $3, $4) RETURNING id',
    [siteId, kind, JSON.stringify(valid), nowMs],
  );
  await client.query('SELECT pg_notify($1, $2)', [DOWNLINK_CHANNEL, siteId]);
  return Number(rows[0]!.id);
}

export interface DownlinkQueueOptions {
  now?: () => number;
  /** Called once per command, after its acknowledgement is recorded. */
  onAck?: (
    siteId: string,
    ack: CommandAck,
    command: { id: number; kind: string; body: unknown },
  ) => Promise<void> | void;
  log?: Logger;
  /** First and longest wait before the listening connection is opened again (ms). */
  reconnectMs?: { min: number; max: number };
}

export class DownlinkQueue {
  private readonly now: () => number;
  private readonly subscribers = new Map<string, Set<() => void>>();
  private readonly connection: ListeningConnection;

  constructor(
    private readonly pool: pg.Pool,
    databaseUrl: string,
    private readonly options: DownlinkQueueOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.connection = new ListeningConnection({
      databaseUrl,
      applicationName: `${APPLICATION_NAME}-listen`,
      channels: [DOWNLINK_CHANNEL],
      what: 'the downlink listening connection',
      log: options.log,
      reconnectMs: options.reconnectMs,
      onNotification: (message) => {
        if (message.channel === DOWNLINK_CHANNEL && message.payload) this.wake(message.payload);
      },
      // Whatever was notified while no connection listened is found by re-reading.
      onUp: (_client, connects) => {
        if (connects > 1) for (const siteId of this.subscribers.keys()) this.wake(siteId);
      },
    });
  }

  /** The backend pid of the listening connection (diagnostics, tests); undefined while it is down. */
  get listenerPid(): number | undefined {
    return this.connection.pid;
  }

  /** Times the listening connection was (re)opened. */
  get connects(): number {
    return this.connection.connects;
  }

  /** Opens the listening connection; resolves once it listens (throws if the first attempt fails). */
  start(): Promise<void> {
    return this.connection.start();
  }

  stop(): Promise<void> {
    return this.connection.stop();
  }

  /** True while the listening connection is up. */
  get listening(): boolean {
    return this.connection.client !== undefined;
  }

  private wake(siteId: string): void {
    for (const wake of this.subscribers.get(siteId) ?? []) {
      try {
        wake();
      } catch (error) {
        this.options.log?.error({ err: error, siteId }, 'a downlink wake-up failed');
      }
    }
  }

  /** Commands for the site not yet acknowledged, after `afterId` and not in `except`, in id order. */
  async pending(
    siteId: string,
    afterId: number,
    limit: number,
    except: readonly number[] = [],
  ): Promise<DownlinkCommand[]> {
    const { rows } = await this.pool.query<{ id: number; kind: CommandKind; body: unknown }>(
      `SELECT id, kind, body FROM downlink
       WHERE site_id = $1 AND acked_at IS NULL AND id > $2 AND id <> ALL($4::bigint[])
       ORDER BY id LIMIT $3`,
      [siteId, afterId, limit, except],
    );
    return rows.map(
      (row) => ({ type: 'command', id: Number(row.id), kind: row.kind, body: row.body }) as DownlinkCommand,
    );
  }

  /** Counts a delivery attempt of these commands (operators see commands sent but never acknowledged). */
  async markSent(siteId: string, ids: readonly number[]): Promise<void> {
    if (ids.length === 0) return;
    await this.pool.query(
      'UPDATE downlink SET sent_count = sent_count + 1 WHERE site_id = $1 AND id = ANY($2::bigint[])',
      [siteId, ids],
    );
  }

  /**
   * Records the site's acknowledgement of a command of its own (the first one wins; later ones,
   * and ids of other sites, change nothing), then calls `onAck`.
   */
  async acknowledge(siteId: string, ack: CommandAck): Promise<void> {
    const { rows } = await this.pool.query<{ id: number; kind: string; body: unknown }>(
      `UPDATE downlink SET acked_at = $3, result = $4, reason = $5
       WHERE id = $1 AND site_id = $2 AND acked_at IS NULL
       RETURNING id, kind, body`,
      [ack.id, siteId, this.now(), ack.result, ack.reason ?? null],
    );
    const row = rows[0];
    if (!row) return;
    await this.options.onAck?.(siteId, ack, { id: Number(row.id), kind: row.kind, body: row.body });
  }

  /** Calls `wake` whenever a command is queued for the site (by any process); returns the unsubscribe. */
  subscribe(siteId: string, wake: () => void): () => void {
    let set = this.subscribers.get(siteId);
    if (!set) {
      set = new Set();
      this.subscribers.set(siteId, set);
    }
    set.add(wake);
    return () => {
      const current = this.subscribers.get(siteId);
      current?.delete(wake);
      if (current?.size === 0) this.subscribers.delete(siteId);
    };
  }
}
