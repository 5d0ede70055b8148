/**
 * The SQL schema, as an ordered list of migrations (docs/architecture.md "Decisions": one place per fact).
 *
 * `PRAGMA user_version` holds the number of the last migration applied. Each pending migration
 * runs in its own transaction together with the bump of `user_version`, so a crash leaves the
 * database at a whole version. A migration, once released, never changes: to change the schema,
 * APPEND a new entry with the next version number (users, messages, audit events, ...).
 * `migrate` refuses a database written by a newer meshhub rather than guess at its schema.
 */
import { StartupFailure } from '../kernel/startup-failure.js';
import type { Database } from './database.js';
import { COLUMN_SEPARATOR, columnsDdl, MESSAGE_TEXT_COLUMNS, SQL_TYPES } from './ddl.js';
import { backupBeforeMigration, holdsData } from './pre-migration-backup.js';
import { decodedMetricsSql, encodeSql, nodeKeyOf } from './reading-codec.js';
import { latestColumnsDdl, METRIC_COLUMNS, readingColumnsDdl, rollupColumnsDdl } from './rollups.js';

/**
 * SQLite's types for the reading tables, whose columns rollups.ts lists (the upstream's
 * PostgreSQL schema makes its own from the same lists). The columns of a released migration
 * never change: a new metric is a new migration.
 */
const SQLITE_TYPES = SQL_TYPES.sqlite;

/**
 * One rollup table (readings_hourly, readings_daily): sum and count per metric per node and
 * bucket; wind direction as sums of sin and cos, for a circular mean.
 */
const rollupTable = (name: string) => `CREATE TABLE ${name} (
        node_id TEXT NOT NULL,
        bucket_start INTEGER NOT NULL,
        ${rollupColumnsDdl(SQLITE_TYPES).join(COLUMN_SEPARATOR)},
        PRIMARY KEY (node_id, bucket_start)
      ) WITHOUT ROWID;`;

export interface Migration {
  /** 1, 2, 3, ...: the position in MIGRATIONS, also the `user_version` after it ran. */
  version: number;
  name: string;
  /** SQL run with `db.exec`, or a function for migrations that need to move data. */
  up: string | ((db: Database) => void);
  /**
   * A migration that moves more data than one transaction should hold (a year of readings): run
   * before `up`, outside any transaction, committing a chunk at a time, so a power cut loses at
   * most the chunk under way. It must pick up where an interrupted run stopped. `up` then runs in
   * the transaction that sets the version.
   */
  steps?: {
    /** Moves the data; calls `report` with the rows done and the rows in all, now and then. */
    run: (db: Database, report: (done: number, total: number) => void) => void;
    /** Whether an earlier run began (then its backup exists: none is taken again). */
    begun: (db: Database) => boolean;
  };
}

/**
 * What a start that migrates is doing, for its log and for systemd (whose start timeout a long
 * migration extends, hub/sd-notify.ts): copying the database first, or moving rows (`done` of
 * `total`, reported when it begins, every PROGRESS_EVERY_MS and when it ends).
 */
export type MigrationProgress =
  | { phase: 'backup'; from: number; to: number }
  /** Rewriting the file into smaller pages (page-size.ts): `bytes` to copy, pages `from` → `to` bytes. */
  | { phase: 'pages'; from: number; to: number; bytes: number }
  | { phase: 'move'; version: number; name: string; done: number; total: number };

export type OnMigrationProgress = (progress: MigrationProgress) => void;

/** How often a migration in steps reports how far it is. */
const PROGRESS_EVERY_MS = 5_000;

/** Where migration 7 keeps the raw rows it has not moved yet. */
const READINGS_BEFORE_V7 = 'readings_before_v7';
/** Raw rows moved per transaction by migration 7: about 6 MB of WAL. */
export const V7_CHUNK_ROWS = 20_000;

function tableExists(db: Database, name: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?").get(name) !== undefined;
}

/**
 * Migration 7's steps: the old `readings` table is renamed, then moved into `reading_rows` a chunk
 * at a time in key order, each chunk inserted and deleted in one transaction (the pages it frees
 * take the next chunk: the file hardly grows).
 */
function moveReadingsToCompactRows(db: Database, report: (done: number, total: number) => void): void {
  if (!tableExists(db, READINGS_BEFORE_V7)) {
    db.transaction(() => {
      db.exec(`
        ALTER TABLE readings RENAME TO ${READINGS_BEFORE_V7};
        -- A small integer per node id that has readings (never reused; kept when rows expire).
        CREATE TABLE reading_nodes (
          node_key INTEGER PRIMARY KEY,
          node_id TEXT NOT NULL UNIQUE
        );
        -- Raw readings, compact (src/store/reading-codec.ts): metric columns without a type, so
        -- without affinity: an INTEGER count of the metric's resolution, or the REAL value. Read
        -- them through the readings view (or decodeSql).
        CREATE TABLE reading_rows (
          node_key INTEGER NOT NULL,
          ts INTEGER NOT NULL,
          ${METRIC_COLUMNS.join(COLUMN_SEPARATOR)},
          PRIMARY KEY (node_key, ts)
        ) WITHOUT ROWID;
      `);
    }).immediate();
  }
  const boundary = db
    .prepare(`SELECT node_id, ts FROM ${READINGS_BEFORE_V7} ORDER BY node_id, ts LIMIT 1 OFFSET ?`)
    .raw(true);
  const addKeys = db.prepare(
    `INSERT OR IGNORE INTO reading_nodes (node_id)
     SELECT DISTINCT node_id FROM ${READINGS_BEFORE_V7} WHERE (node_id, ts) <= (?, ?)`,
  );
  const cols = METRIC_COLUMNS.join(', ');
  const move = db.prepare(
    `INSERT INTO reading_rows (node_key, ts, ${cols})
     SELECT k.node_key, r.ts, ${METRIC_COLUMNS.map((c) => encodeSql(`r.${c}`, c)).join(', ')}
     FROM ${READINGS_BEFORE_V7} r JOIN reading_nodes k ON k.node_id = r.node_id
     WHERE (r.node_id, r.ts) <= (?, ?)`,
  );
  const drop = db.prepare(`DELETE FROM ${READINGS_BEFORE_V7} WHERE (node_id, ts) <= (?, ?)`);
  const last = db
    .prepare(`SELECT node_id, ts FROM ${READINGS_BEFORE_V7} ORDER BY node_id DESC, ts DESC LIMIT 1`)
    .raw(true);
  const chunk = db.transaction((): number => {
    const upTo = (boundary.get(V7_CHUNK_ROWS - 1) ?? last.get()) as [string, number] | undefined;
    if (upTo === undefined) return 0;
    addKeys.run(...upTo);
    const moved = move.run(...upTo).changes;
    drop.run(...upTo);
    return moved;
  });
  const count = (table: string) => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
  // A run that goes on after an interruption counts what the earlier runs moved as done.
  let done = count('reading_rows');
  const total = done + count(READINGS_BEFORE_V7);
  if (done === total) return;
  report(done, total);
  let reported = Date.now();
  for (let moved = chunk.immediate(); moved > 0; moved = chunk.immediate()) {
    done += moved;
    if (Date.now() - reported >= PROGRESS_EVERY_MS) {
      report(done, total);
      reported = Date.now();
    }
  }
  report(done, total);
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'readings, latest readings, hourly and daily rollups, nodes',
    up: `
      -- Raw readings: one row per node and receive time (ms UTC), one nullable column per metric.
      CREATE TABLE readings (
        node_id TEXT NOT NULL,
        ts INTEGER NOT NULL,
        ${readingColumnsDdl(SQLITE_TYPES).join(COLUMN_SEPARATOR)},
        PRIMARY KEY (node_id, ts)
      ) WITHOUT ROWID;

      -- Per node: each metric's newest value and the time of that value, merged field by field;
      -- ts is the newest reading of any metric.
      CREATE TABLE readings_latest (
        node_id TEXT NOT NULL PRIMARY KEY,
        ts INTEGER NOT NULL,
        ${latestColumnsDdl(SQLITE_TYPES).join(COLUMN_SEPARATOR)}
      ) WITHOUT ROWID;

      -- Rollups per UTC hour / UTC day: sum and count per metric (mean = sum / count); wind
      -- direction as sums of sin and cos for a circular mean. Kept when raw rows expire.
      ${rollupTable('readings_hourly')}

      ${rollupTable('readings_daily')}

      -- Mesh nodes (NodeInfo, positions, device metrics); last_heard and updated_at in ms UTC.
      CREATE TABLE nodes (
        node_num INTEGER PRIMARY KEY,
        node_id TEXT NOT NULL UNIQUE,
        short_name TEXT,
        long_name TEXT,
        hw_model TEXT,
        latitude REAL,
        longitude REAL,
        altitude REAL,
        last_heard INTEGER,
        battery_level REAL,
        snr REAL,
        updated_at INTEGER NOT NULL
      );
    `,
  },
  {
    version: 2,
    name: 'users, subscriptions, messages, conversations, idempotency keys, hub state',
    up: `
      -- Local accounts: scrypt password hashes (src/auth/passwords.ts), roles as a JSON array.
      CREATE TABLE users (
        username TEXT NOT NULL PRIMARY KEY,
        password_hash TEXT NOT NULL,
        roles TEXT NOT NULL DEFAULT '[]',
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      ) WITHOUT ROWID;

      -- Which nodes a subscriber (a principal: local username or idp:<sub>) may message.
      CREATE TABLE subscriptions (
        id INTEGER PRIMARY KEY,
        subscriber TEXT NOT NULL,
        all_nodes INTEGER NOT NULL DEFAULT 0 CHECK (all_nodes IN (0, 1)),
        status TEXT NOT NULL CHECK (status IN ('pending', 'active', 'revoked')),
        expires_at INTEGER,
        source TEXT NOT NULL,
        reference TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX subscriptions_by_subscriber ON subscriptions (subscriber, status);
      CREATE TABLE subscription_nodes (
        subscription_id INTEGER NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
        node_id TEXT NOT NULL,
        PRIMARY KEY (subscription_id, node_id)
      ) WITHOUT ROWID;

      -- Every text to or from a node. owner NULL: an inbound text nobody could be matched with
      -- (kept for admins). The 'queued' rows ARE the durable send queue.
      CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        public_id TEXT NOT NULL UNIQUE,
        owner TEXT,
        ${columnsDdl(MESSAGE_TEXT_COLUMNS, 'sqlite')},
        packet_id INTEGER,
        attempts INTEGER NOT NULL DEFAULT 0,
        ack_deadline INTEGER,
        next_attempt_at INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX messages_conversation ON messages (owner, node_id, id);
      CREATE INDEX messages_send_queue ON messages (next_attempt_at, id)
        WHERE direction = 'outbound' AND status = 'queued';
      CREATE INDEX messages_in_flight ON messages (ack_deadline) WHERE ack_deadline IS NOT NULL;
      CREATE UNIQUE INDEX messages_inbound_packet ON messages (node_id, packet_id) WHERE direction = 'inbound';
      CREATE INDEX messages_unmatched ON messages (id) WHERE owner IS NULL;

      -- Each radio attempt of an outbound message: ROUTING_APP request_id → message.
      CREATE TABLE message_packets (
        packet_id INTEGER NOT NULL PRIMARY KEY,
        message_id INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
        attempt INTEGER NOT NULL,
        sent_at INTEGER NOT NULL
      );
      CREATE INDEX message_packets_by_message ON message_packets (message_id);

      -- Every status transition with its time (and why, for retries and failures); seq orders
      -- the transitions of one message.
      CREATE TABLE message_transitions (
        message_id INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        status TEXT NOT NULL,
        reason TEXT,
        at INTEGER NOT NULL,
        PRIMARY KEY (message_id, seq)
      ) WITHOUT ROWID;

      -- One summary per (subscriber, node), kept in step with messages in the same transaction,
      -- so listing conversations never aggregates the messages table. last_outbound_at: when the
      -- subscriber last wrote to the node (an inbound text goes to the last writer).
      CREATE TABLE conversations (
        owner TEXT NOT NULL,
        owner_name TEXT,
        node_id TEXT NOT NULL,
        nickname TEXT,
        latest_message_id INTEGER NOT NULL,
        latest_text TEXT NOT NULL,
        latest_at INTEGER NOT NULL,
        last_outbound_at INTEGER,
        unread_count INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (owner, node_id)
      ) WITHOUT ROWID;
      -- Covering: the list of conversations is read from this index alone (plus the node's name).
      CREATE INDEX conversations_by_latest
        ON conversations (owner, latest_at DESC, node_id, unread_count, nickname, latest_text);
      CREATE INDEX conversations_by_node ON conversations (node_id);

      -- Idempotency-Key of POST /api/v1/messages: the first 202 body, replayed to a retry.
      CREATE TABLE idempotency_keys (
        owner TEXT NOT NULL,
        key TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        message_id INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
        response TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (owner, key)
      ) WITHOUT ROWID;
      CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);

      -- Small facts the hub remembers across restarts (the radio's own node number).
      CREATE TABLE hub_state (
        key TEXT NOT NULL PRIMARY KEY,
        value TEXT NOT NULL
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 3,
    name: 'held texts: hold end, waiting for the node, attempt and code of each transition',
    up: `
      -- Held texts (docs/held-texts.md): a text whose node cannot be reached stays queued until
      -- its hold ends (hold_until, ms; = created_at: no hold; NULL: not yet given, the gateway
      -- applies MESSAGE_HOLD_HOURS, as for texts queued before this version). held_since: since
      -- when it waits for its node to be heard (NULL: it does not).
      ALTER TABLE messages ADD COLUMN hold_until INTEGER;
      ALTER TABLE messages ADD COLUMN held_since INTEGER;
      -- Per node, oldest first: a text goes out only when no older one of its sender to its
      -- node is queued (a conversation keeps its order).
      CREATE INDEX messages_queue_by_node ON messages (node_id, id)
        WHERE direction = 'outbound' AND status = 'queued';
      CREATE INDEX messages_hold_end ON messages (hold_until)
        WHERE direction = 'outbound' AND status = 'queued' AND hold_until IS NOT NULL;
      -- Which attempt a transition concluded, and its code (Routing_Error name, ACK_TIMEOUT, ...).
      ALTER TABLE message_transitions ADD COLUMN attempt INTEGER;
      ALTER TABLE message_transitions ADD COLUMN code TEXT;
    `,
  },
  {
    version: 4,
    name: 'revocable tokens: a token version per user, refresh tokens',
    up: `
      -- Every token the hub issues carries its user's token_version (README "Logins and
      -- tokens"); removing the user, changing roles or password, or "meshhub token revoke"
      -- bumps it, and tokens of another version are refused. 0 for users made before: tokens
      -- issued before this version carry none and count as 0 until the first bump.
      ALTER TABLE users ADD COLUMN token_version INTEGER NOT NULL DEFAULT 0;
      -- Refresh tokens: only their SHA-256 is kept; single use (rotated), valid while the user's
      -- token_version is still the one they were issued at.
      CREATE TABLE refresh_tokens (
        token_hash TEXT NOT NULL PRIMARY KEY,
        username TEXT NOT NULL,
        token_version INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX refresh_tokens_by_user ON refresh_tokens (username, created_at);
      CREATE INDEX refresh_tokens_by_expiry ON refresh_tokens (expires_at);
    `,
  },
  {
    version: 5,
    name: 'node public keys and the ids of renumbered nodes',
    up: `
      -- User.public_key as first heard (32 bytes); a later, different key for the same number is
      -- not taken (firmware keeps the first key too). Renumbered nodes are found by it.
      ALTER TABLE nodes ADD COLUMN public_key BLOB;
      CREATE INDEX nodes_by_public_key ON nodes (public_key) WHERE public_key IS NOT NULL;
      -- A node renumbered (firmware 2.8 derives the number from the key): its old id, the id it
      -- has now, when the link was made. Every old id of a node points at its current id.
      CREATE TABLE node_aliases (
        old_node_id TEXT NOT NULL PRIMARY KEY,
        node_id TEXT NOT NULL,
        linked_at INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX node_aliases_by_node ON node_aliases (node_id, linked_at);
    `,
  },
  {
    version: 6,
    name: 'open buckets: the rollup buckets the reading writer holds in memory',
    up: `
      -- The hourly and daily bucket each node has open in the writer's memory (its newest
      -- reading's: src/store/open-buckets.ts). Their rows in readings_hourly/readings_daily are
      -- written when they close; after a crash the writer sums these again from the raw rows.
      CREATE TABLE readings_open (
        node_id TEXT NOT NULL,
        interval TEXT NOT NULL CHECK (interval IN ('1h', '1d')),
        bucket_start INTEGER NOT NULL,
        PRIMARY KEY (node_id, interval)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 7,
    name: 'compact raw readings: an integer node key, metrics as counts of their resolution',
    steps: { run: moveReadingsToCompactRows, begun: (db) => tableExists(db, READINGS_BEFORE_V7) },
    up: `
      DROP TABLE ${READINGS_BEFORE_V7};
      -- The raw readings as they were written (node id, time, each metric's number), for people
      -- and scripts; the hub reads reading_rows with the same decoding.
      CREATE VIEW readings AS
        SELECT n.node_id AS node_id, r.ts AS ts, ${decodedMetricsSql('r')}
        FROM reading_rows r JOIN reading_nodes n ON n.node_key = r.node_key;
      CREATE TRIGGER readings_insert INSTEAD OF INSERT ON readings BEGIN
        INSERT OR IGNORE INTO reading_nodes (node_id) VALUES (NEW.node_id);
        INSERT INTO reading_rows (node_key, ts, ${METRIC_COLUMNS.join(', ')})
        VALUES (${nodeKeyOf('NEW.node_id')}, NEW.ts,
          ${METRIC_COLUMNS.map((c) => encodeSql(`NEW.${c}`, c)).join(', ')});
      END;
      CREATE TRIGGER readings_update INSTEAD OF UPDATE ON readings BEGIN
        UPDATE reading_rows SET ${METRIC_COLUMNS.map((c) => `${c} = ${encodeSql(`NEW.${c}`, c)}`).join(', ')}
        WHERE node_key = ${nodeKeyOf('OLD.node_id')} AND ts = OLD.ts;
      END;
      CREATE TRIGGER readings_delete INSTEAD OF DELETE ON readings BEGIN
        DELETE FROM reading_rows
        WHERE node_key = ${nodeKeyOf('OLD.node_id')} AND ts = OLD.ts;
      END;
    `,
  },
  // Append new migrations here: { version: 8, name: '...', up: `CREATE TABLE ...` },
];

/**
 * A database written by a newer meshhub: never migrated down, never opened half-understood. One
 * line at start-up (a StartupFailure), naming what to do.
 */
export class SchemaTooNewError extends StartupFailure {
  override readonly name = 'SchemaTooNewError';
  constructor(
    readonly found: number,
    readonly known: number,
  ) {
    super(
      `database schema version ${found} is newer than this meshhub knows (${known}); upgrade meshhub, or restore a backup made by this version (meshhub restore)`,
    );
  }
}

export function schemaVersion(db: Database): number {
  return db.pragma('user_version', { simple: true }) as number;
}

/**
 * Applies every pending migration, each in its own transaction (a migration in steps, a chunk per
 * transaction first). Returns the resulting version.
 */
export function migrate(
  db: Database,
  migrations: readonly Migration[] = MIGRATIONS,
  onProgress?: OnMigrationProgress,
): number {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1)
      throw new Error(`migration "${m.name}" has version ${m.version}, expected ${i + 1}`);
  });
  const current = schemaVersion(db);
  if (current > migrations.length) throw new SchemaTooNewError(current, migrations.length);
  // A database with data is copied first (pre-migration-backup.ts): an upgrade cannot eat it. An
  // interrupted run of a migration in steps took its copy before it began.
  const resuming = migrations[current]?.steps?.begun(db) ?? false;
  if (current < migrations.length && !resuming) {
    if (onProgress && holdsData(db)) onProgress({ phase: 'backup', from: current, to: migrations.length });
    backupBeforeMigration(db, { from: current, to: migrations.length });
  }
  for (const migration of migrations.slice(current)) {
    const { version, name } = migration;
    migration.steps?.run(db, (done, total) => onProgress?.({ phase: 'move', version, name, done, total }));
    db.transaction(() => {
      if (typeof migration.up === 'string') db.exec(migration.up);
      else migration.up(db);
      // user_version lives in the database header and commits (or rolls back) with the transaction.
      db.pragma(`user_version = ${migration.version}`);
    }).immediate();
  }
  return schemaVersion(db);
}
