/**
 * The site's sync tables (a component schema, "sync") and the triggers that fill the outbox
 * (docs/sync.md "Outbox").
 *
 * Why triggers: every write path — the reading writer, the messaging repositories, the CLI,
 * plugins — gets its outbox entry in the same transaction as the record, without knowing that
 * sync exists, so a crash can never keep a record without its entry (or the other way round).
 * `seq` is AUTOINCREMENT: inside a transaction it is gap-free, since a rolled-back transaction
 * rolls its numbers (and `sqlite_sequence`) back too, and SQLite's single writer commits them in
 * order, so a reader never sees seq n + 1 before n.
 *
 * Each body is built with `json_object()` and is exactly the protocol.ts `RECORD_BODIES` shape
 * (snake_case keys, booleans as JSON true/false, nested arrays as JSON). The triggers exist only
 * while sync is configured: `enableOutbox` (re)creates them on every start, `disableOutbox`
 * drops them, and a hub without an upstream pays nothing.
 *
 * The readings trigger is on the ingest hot path: one `INSERT … VALUES (json_object(…))` per
 * row, nothing read. An UPDATE that changes nothing (a replayed fill, a no-op upsert) writes no
 * entry; message updates write one only when what the upstream shows changed (status, failure,
 * owner), not for send-attempt bookkeeping.
 */
import { type ComponentMigration, migrateComponent } from '../../src/store/component-migrations.js';
import type { Database } from '../../src/store/database.js';
import { METRIC_COLUMNS } from '../../src/store/rollups.js';

export const SYNC_COMPONENT = 'sync';

export const SYNC_MIGRATIONS: readonly ComponentMigration[] = [
  {
    version: 1,
    name: 'outbox, sync state, downlink commands applied',
    up: `
      -- One entry per stored record, in commit order. body: the record's JSON (protocol.ts
      -- RECORD_BODIES); NULL with kind 'dropped' for a reading dropped for the disk budget (the
      -- row stays so the sequence has no gap). at: when the entry was written (ms UTC).
      CREATE TABLE sync_outbox (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL,
        at INTEGER NOT NULL,
        body TEXT
      );

      -- acked_seq, last_success_at, last_error, last_error_at, clock_offset_ms, dropped_total.
      CREATE TABLE sync_state (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
      ) WITHOUT ROWID;

      -- Downlink commands applied (each id once): result applied | rejected, with the reason.
      CREATE TABLE sync_downlink_applied (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        result TEXT NOT NULL,
        reason TEXT,
        applied_at INTEGER NOT NULL
      );
    `,
  },
];

/** Creates or updates the sync tables (no triggers): what reading the outbox needs. */
export function migrateSyncTables(db: Database): void {
  migrateComponent(db, SYNC_COMPONENT, SYNC_MIGRATIONS);
}

/** Now in ms since the epoch, in SQLite (julianday keeps milliseconds; unixepoch() does not). */
export const SQL_NOW_MS = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";

/** Every outbox trigger's name starts with this; `disableOutbox` drops exactly those. */
export const TRIGGER_PREFIX = 'sync_outbox_';

const READING_COLUMNS = ['node_id', 'ts', ...METRIC_COLUMNS];
const NODE_COLUMNS = [
  'node_num',
  'node_id',
  'short_name',
  'long_name',
  'hw_model',
  'latitude',
  'longitude',
  'altitude',
  'last_heard',
  'battery_level',
  'snr',
  'updated_at',
];
/** What an upstream shows of a message: an update of anything else writes no entry. */
const MESSAGE_WATCHED = ['status', 'failure_code', 'failure_reason', 'owner', 'owner_name'];
const SUBSCRIPTION_COLUMNS = [
  'subscriber',
  'all_nodes',
  'status',
  'expires_at',
  'source',
  'reference',
  'created_at',
  'updated_at',
];

/** `json_object('a', p.a, 'b', p.b)`: the columns under their own names. */
const columnsObject = (prefix: string, columns: readonly string[]) =>
  `json_object(${columns.map((c) => `'${c}', ${prefix}.${c}`).join(', ')})`;

/** `NEW.a IS NOT OLD.a OR …`: the update changed one of these columns. */
const changed = (columns: readonly string[]) => columns.map((c) => `NEW.${c} IS NOT OLD.${c}`).join(' OR ');

/**
 * The protocol carries readings of mesh nodes only (`!` and 8 lower-case hex digits). HTTP and
 * MQTT ingest also accept station ids such as `roof-1`: a record for one would be refused by
 * the upstream and stall the whole push, so those readings stay local (GLOB is case-sensitive).
 */
const MESH_NODE = `NEW.node_id GLOB '!${'[0-9a-f]'.repeat(8)}'`;

const outboxInsert = (kind: string, body: string) =>
  `INSERT INTO sync_outbox (kind, at, body) VALUES ('${kind}', ${SQL_NOW_MS}, ${body});`;

/** A subscription's whole state (row + its node ids, ordered) from `subscriptions s`. */
const SUBSCRIPTION_SELECT = `
  SELECT 'subscription', ${SQL_NOW_MS}, json_object(
    'id', s.id,
    'subscriber', s.subscriber,
    'all_nodes', json(CASE s.all_nodes WHEN 1 THEN 'true' ELSE 'false' END),
    'node_ids', json((SELECT json_group_array(node_id) FROM
      (SELECT node_id FROM subscription_nodes WHERE subscription_id = s.id ORDER BY node_id))),
    'status', s.status,
    'expires_at', s.expires_at,
    'source', s.source,
    'reference', s.reference,
    'created_at', s.created_at,
    'updated_at', s.updated_at)
  FROM subscriptions s`;

interface TriggerGroup {
  /** Every table the triggers read or fire on: the group is created only when all exist. */
  tables: readonly string[];
  triggers: readonly { name: string; sql: string }[];
}

const trigger = (name: string, head: string, body: string) => ({
  name: `${TRIGGER_PREFIX}${name}`,
  sql: `CREATE TRIGGER ${TRIGGER_PREFIX}${name} ${head} BEGIN ${body} END`,
});

const TRIGGER_GROUPS: readonly TriggerGroup[] = [
  {
    tables: ['readings'],
    triggers: [
      trigger(
        'readings_insert',
        `AFTER INSERT ON readings WHEN ${MESH_NODE}`,
        outboxInsert('reading', columnsObject('NEW', READING_COLUMNS)),
      ),
      trigger(
        'readings_update',
        `AFTER UPDATE ON readings WHEN ${MESH_NODE} AND (${changed(READING_COLUMNS)})`,
        outboxInsert('reading', columnsObject('NEW', READING_COLUMNS)),
      ),
    ],
  },
  {
    tables: ['nodes'],
    triggers: [
      trigger(
        'nodes_insert',
        'AFTER INSERT ON nodes',
        outboxInsert('node', columnsObject('NEW', NODE_COLUMNS)),
      ),
      trigger(
        'nodes_update',
        `AFTER UPDATE ON nodes WHEN ${changed(NODE_COLUMNS)}`,
        outboxInsert('node', columnsObject('NEW', NODE_COLUMNS)),
      ),
    ],
  },
  {
    tables: ['messages', 'message_transitions'],
    triggers: (() => {
      const body = `json_object(
        'id', NEW.public_id, 'owner', NEW.owner, 'owner_name', NEW.owner_name, 'node_id', NEW.node_id,
        'direction', NEW.direction, 'sender_node_id', NEW.sender_node_id,
        'target_node_id', NEW.target_node_id, 'text', NEW.text, 'status', NEW.status,
        'failure_code', NEW.failure_code, 'failure_reason', NEW.failure_reason,
        'created_at', NEW.created_at, 'updated_at', NEW.updated_at)`;
      return [
        trigger('messages_insert', 'AFTER INSERT ON messages', outboxInsert('message', body)),
        // UPDATE OF: an update that sets none of these (attempts, ack_deadline, packet_id) is
        // not even looked at; WHEN: one that sets them to what they were writes nothing either.
        trigger(
          'messages_update',
          `AFTER UPDATE OF ${MESSAGE_WATCHED.join(', ')} ON messages WHEN ${changed(MESSAGE_WATCHED)}`,
          outboxInsert('message', body),
        ),
        trigger(
          'message_transitions_insert',
          'AFTER INSERT ON message_transitions',
          `INSERT INTO sync_outbox (kind, at, body)
           SELECT 'message_transition', ${SQL_NOW_MS}, json_object('message_id', m.public_id,
             'seq', NEW.seq, 'status', NEW.status, 'reason', NEW.reason, 'at', NEW.at)
           FROM messages m WHERE m.id = NEW.message_id;`,
        ),
      ];
    })(),
  },
  {
    tables: ['subscriptions', 'subscription_nodes'],
    triggers: [
      trigger(
        'subscriptions_insert',
        'AFTER INSERT ON subscriptions',
        `INSERT INTO sync_outbox (kind, at, body) ${SUBSCRIPTION_SELECT} WHERE s.id = NEW.id;`,
      ),
      trigger(
        'subscriptions_update',
        `AFTER UPDATE ON subscriptions WHEN ${changed(['id', ...SUBSCRIPTION_COLUMNS])}`,
        `INSERT INTO sync_outbox (kind, at, body) ${SUBSCRIPTION_SELECT} WHERE s.id = NEW.id;`,
      ),
      trigger(
        'subscription_nodes_insert',
        'AFTER INSERT ON subscription_nodes',
        `INSERT INTO sync_outbox (kind, at, body) ${SUBSCRIPTION_SELECT} WHERE s.id = NEW.subscription_id;`,
      ),
      trigger(
        'subscription_nodes_delete',
        'AFTER DELETE ON subscription_nodes',
        `INSERT INTO sync_outbox (kind, at, body) ${SUBSCRIPTION_SELECT} WHERE s.id = OLD.subscription_id;`,
      ),
    ],
  },
  {
    // The audit plugin's tables (plugins/audit/store/schema.ts), when it has run here.
    tables: ['audit_events', 'audit_event_raw', 'audit_actors', 'audit_operations', 'audit_results'],
    triggers: [
      // The writer inserts the event, then its raw record: the raw insert sees the whole event.
      // `result` is the normalised result (success | failure | unknown), as in the audit API;
      // what the source said is in `raw`. LEFT JOINs: an entry is never lost to a dictionary.
      trigger(
        'audit_event_raw_insert',
        'AFTER INSERT ON audit_event_raw',
        `INSERT INTO sync_outbox (kind, at, body)
         SELECT 'audit_event', ${SQL_NOW_MS}, json_object(
           'source', e.source, 'source_key', e.source_key, 'ts', e.ts, 'service', e.service,
           'operation', coalesce(o.name, ''), 'result', coalesce(r.normalized, 'unknown'),
           'actor', coalesce(a.name, ''), 'target', e.target, 'tags', json(e.tags),
           'raw', NEW.raw, 'ingested_at', e.ingested_at)
         FROM audit_events e
           LEFT JOIN audit_operations o ON o.id = e.operation_id
           LEFT JOIN audit_results r ON r.id = e.result_id
           LEFT JOIN audit_actors a ON a.id = e.actor_id
         WHERE e.seq = NEW.seq;`,
      ),
      trigger(
        'audit_events_tags',
        'AFTER UPDATE OF tags ON audit_events WHEN NEW.tags IS NOT OLD.tags',
        outboxInsert(
          'audit_tags',
          `json_object('source', NEW.source, 'source_key', NEW.source_key, 'tags', json(NEW.tags))`,
        ),
      ),
    ],
  },
  {
    tables: ['audit_events', 'audit_event_comments'],
    triggers: [
      trigger(
        'audit_event_comments_insert',
        'AFTER INSERT ON audit_event_comments',
        `INSERT INTO sync_outbox (kind, at, body)
         SELECT 'audit_comment', ${SQL_NOW_MS}, json_object('source', e.source, 'source_key', e.source_key,
           'comment_id', NEW.id, 'author', NEW.author, 'text', NEW.text, 'created_at', NEW.created_at)
         FROM audit_events e WHERE e.seq = NEW.seq;`,
      ),
    ],
  },
];

function existingTables(db: Database): Set<string> {
  const names = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
  return new Set(names);
}

function outboxTriggers(db: Database): string[] {
  return db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND substr(name, 1, ?) = ?")
    .pluck()
    .all(TRIGGER_PREFIX.length, TRIGGER_PREFIX) as string[];
}

/** Names of the outbox triggers present now (for `meshhub sync status` and tests). */
export function outboxTriggerNames(db: Database): string[] {
  return outboxTriggers(db).sort();
}

/**
 * Migrates the 'sync' component and (re)creates every outbox trigger: on the core tables always,
 * on the audit plugin's tables only when they exist (call it again after a plugin migrated its
 * tables). Idempotent, in one transaction; call it on every start while sync is configured.
 */
export function enableOutbox(db: Database): void {
  migrateSyncTables(db);
  db.transaction(() => {
    // Dropped and created again, so a newer meshhub's trigger definitions replace older ones.
    for (const name of outboxTriggers(db)) db.exec(`DROP TRIGGER IF EXISTS "${name}"`);
    const tables = existingTables(db);
    for (const group of TRIGGER_GROUPS) {
      if (!group.tables.every((t) => tables.has(t))) continue;
      for (const t of group.triggers) db.exec(t.sql);
    }
  }).immediate();
}

/**
 * Drops every outbox trigger (sync no longer configured): nothing more is written to the outbox.
 * Keeps the tables, so the cursor and what was not yet pushed survive a later re-enable.
 */
export function disableOutbox(db: Database): void {
  db.transaction(() => {
    for (const name of outboxTriggers(db)) db.exec(`DROP TRIGGER IF EXISTS "${name}"`);
  }).immediate();
}
