/**
 * The site's sync tables (a component schema, "sync") and what fills the outbox (docs/sync.md
 * "Outbox"): SQLite triggers for every recorded table but readings, and an observer of the
 * reading writer for readings.
 *
 * Why triggers: every write path — the messaging repositories, the CLI, plugins — gets its outbox
 * entry in the same transaction as the record, without knowing that sync exists, so a crash can
 * never keep a record without its entry (or the other way round). `seq` is AUTOINCREMENT: inside
 * a transaction it is gap-free, since a rolled-back transaction rolls its numbers (and
 * `sqlite_sequence`) back too, and SQLite's single writer commits them in order, so a reader
 * never sees seq n + 1 before n.
 *
 * Why not for readings: they are the ingest hot path and nearly all of the volume. A trigger
 * costs a `json_object()` and an outbox row PER READING (+66% on the writer, measured; see
 * BENCHMARKS.md "Issue 12"). The reading writer (src/store/reading-writer.ts) is the only code
 * that writes `readings`, and it calls its observers (src/store/reading-observers.ts) INSIDE its
 * transaction with exactly what it added; the observer registered here appends one `readings`
 * entry per MAX_READINGS_ROWS rows of that transaction, its JSON made by JSON.stringify of the
 * rows (0.47 µs a row against 0.85 µs for a hand-built string, measured), so the same guarantee
 * holds: the readings and their entries commit or roll back together.
 *
 * Each trigger body is built with `json_object()` and is exactly the protocol.ts `RECORD_BODIES`
 * shape (snake_case keys, booleans as JSON true/false, nested arrays as JSON). The triggers and
 * the observer exist only while sync is configured: `enableOutbox` (re)creates the triggers and
 * registers the observer on every start (before any actor starts, so no reading is written
 * without it), `disableOutbox` drops and unregisters them, and a hub without an upstream pays
 * nothing. An UPDATE that changes nothing (a no-op upsert) writes no entry; message updates write
 * one only when what the upstream shows changed (status, failure, owner), not for send-attempt
 * bookkeeping.
 */
import { READING_NODE_ID } from '../../src/ingest/reading-input.js';
import { type ComponentMigration, migrateComponent } from '../../src/store/component-migrations.js';
import type { Database, Statement } from '../../src/store/database.js';
import { observeStoredReadings, type ReadingsObserver } from '../../src/store/reading-observers.js';
import { MAX_READINGS_ROWS } from '../protocol.js';

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
  {
    version: 2,
    name: 'reading entries become one-row readings entries',
    // Readings now travel as `readings` records written by the reading writer's observer; the
    // triggers of version 1 wrote one `reading` entry per reading (the whole row). Entries not
    // yet pushed become one-row `readings` entries in place (same seq: the sequence stays
    // whole), so the budget and the push know one kind. A whole row where the new kind carries
    // only what was added is fine: the upstream counts only what a row adds to what it holds.
    // json_extract and json_array keep a double's 17 significant digits: nothing is rounded.
    up: `
      UPDATE sync_outbox
      SET kind = 'readings',
          body = json_object('rows', json_array(json_array(
            json_extract(body, '$.node_id'),
            json_extract(body, '$.ts'),
            json_extract(body, '$.temperature_c'),
            json_extract(body, '$.humidity_percent'),
            json_extract(body, '$.pressure_pa'),
            json_extract(body, '$.wind_speed_ms'),
            json_extract(body, '$.wind_direction'),
            json_extract(body, '$.pm25_ugm3'),
            json_extract(body, '$.pm10_ugm3'),
            json_extract(body, '$.gas_resistance_kohm'))))
      WHERE kind = 'reading' AND body IS NOT NULL;
    `,
  },
  {
    version: 3,
    name: 'node entries carry their node id: an unsent one takes the newer state of its node',
    // A radio site writes a node update with nearly every packet (last_heard, snr): offline for
    // a week, 50 nodes make 100,000 of them, each a record to send and apply, though the
    // upstream keeps only the newest state of a node. The triggers now put the newest state
    // into the node's newest entry while that entry has not been read for a batch yet
    // (seq > the READ_THROUGH_KEY state, set by Outbox.readBatch), and append an entry otherwise: nothing already read is
    // ever changed, so a batch sent again is the batch sent before.
    up: `
      ALTER TABLE sync_outbox ADD COLUMN node_id TEXT;
      CREATE INDEX sync_outbox_node ON sync_outbox (node_id, seq) WHERE node_id IS NOT NULL;
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

const outboxInsert = (kind: string, body: string) =>
  `INSERT INTO sync_outbox (kind, at, body) VALUES ('${kind}', ${SQL_NOW_MS}, ${body});`;

/** The `sync_state` key of the newest entry read for a batch (sync/site/outbox.ts). */
export const READ_THROUGH_KEY = 'read_through';

/** The node's newest entry while no batch has read it yet (a seq, or no row). */
const UNREAD_NODE_ENTRY = `
  SELECT seq FROM sync_outbox
  WHERE seq = (SELECT max(seq) FROM sync_outbox WHERE node_id = NEW.node_id)
    AND seq > coalesce((SELECT CAST(value AS INTEGER) FROM sync_state WHERE key = '${READ_THROUGH_KEY}'), 0)`;

/**
 * A node's state: into its newest entry while no batch has read that entry, else a new entry
 * (migration 3 says why). The upstream keeps only a node's newest state, so one entry carrying
 * it stands for every update it took in.
 */
const nodeEntry = `
  UPDATE sync_outbox SET at = ${SQL_NOW_MS}, body = ${columnsObject('NEW', NODE_COLUMNS)}
  WHERE seq IN (${UNREAD_NODE_ENTRY});
  INSERT INTO sync_outbox (kind, at, body, node_id)
  SELECT 'node', ${SQL_NOW_MS}, ${columnsObject('NEW', NODE_COLUMNS)}, NEW.node_id
  WHERE NOT EXISTS (${UNREAD_NODE_ENTRY});`;

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

/**
 * Issue 29: an audit record's body with its tenant's name, left out for the `default` tenant so
 * a single-tenant site's records are as before (an upstream reads a missing tenant as `default`).
 */
function withTenant(body: string, tenantId: string): string {
  return `json_remove(json_set(${body}, '$.tenant', (SELECT name FROM audit_tenants WHERE id = ${tenantId})),
    CASE WHEN ${tenantId} = 1 THEN '$.tenant' ELSE '$.__keep' END)`;
}

/**
 * An outbox row of `kind` whose body (`json`, with its tenant) is made from the audit event
 * `audit_events e` of NEW's `seq`; `joins` reach the event's dictionaries.
 */
function auditEventOutbox(kind: string, json: string, joins = ''): string {
  return `INSERT INTO sync_outbox (kind, at, body)
         SELECT '${kind}', ${SQL_NOW_MS}, ${withTenant(json, 'e.tenant_id')}
         FROM audit_events e ${joins}
         WHERE e.seq = NEW.seq;`;
}

const TRIGGER_GROUPS: readonly TriggerGroup[] = [
  {
    tables: ['nodes'],
    triggers: [
      trigger('nodes_insert', 'AFTER INSERT ON nodes', nodeEntry),
      trigger('nodes_update', `AFTER UPDATE ON nodes WHEN ${changed(NODE_COLUMNS)}`, nodeEntry),
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
    tables: [
      'audit_events',
      'audit_event_raw',
      'audit_actors',
      'audit_operations',
      'audit_results',
      'audit_tenants',
    ],
    triggers: [
      // The writer inserts the event, then its raw record: the raw insert sees the whole event.
      // `result` is the normalised result (success | failure | unknown), as in the audit API;
      // what the source said is in `raw`. LEFT JOINs: an entry is never lost to a dictionary.
      trigger(
        'audit_event_raw_insert',
        'AFTER INSERT ON audit_event_raw',
        auditEventOutbox(
          'audit_event',
          `json_object(
           'source', e.source, 'source_key', e.source_key, 'ts', e.ts, 'service', e.service,
           'operation', coalesce(o.name, ''), 'result', coalesce(r.normalized, 'unknown'),
           'actor', coalesce(a.name, ''), 'target', e.target, 'tags', json(e.tags),
           'raw', NEW.raw, 'ingested_at', e.ingested_at)`,
          `LEFT JOIN audit_operations o ON o.id = e.operation_id
           LEFT JOIN audit_results r ON r.id = e.result_id
           LEFT JOIN audit_actors a ON a.id = e.actor_id`,
        ),
      ),
      trigger(
        'audit_events_tags',
        'AFTER UPDATE OF tags ON audit_events WHEN NEW.tags IS NOT OLD.tags',
        outboxInsert(
          'audit_tags',
          withTenant(
            `json_object('source', NEW.source, 'source_key', NEW.source_key, 'tags', json(NEW.tags))`,
            'NEW.tenant_id',
          ),
        ),
      ),
    ],
  },
  {
    tables: ['audit_events', 'audit_event_comments', 'audit_tenants'],
    triggers: [
      trigger(
        'audit_event_comments_insert',
        'AFTER INSERT ON audit_event_comments',
        auditEventOutbox(
          'audit_comment',
          `json_object('source', e.source, 'source_key', e.source_key,
           'comment_id', NEW.id, 'author', NEW.author, 'text', NEW.text, 'created_at', NEW.created_at)`,
        ),
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

/** The outbox kind of readings: one entry per MAX_READINGS_ROWS rows of a writer transaction. */
export const READINGS_KIND = 'readings';

/**
 * The observer that writes `readings` entries for what the reading writer stored, called inside
 * its transaction. A row whose node id the protocol cannot carry (not READING_NODE_ID) stays
 * local: no ingest path stores one (MQTT and HTTP ingest refuse them, the radio's are
 * `!xxxxxxxx`), and an entry for it would be refused upstream and stall every later entry.
 */
export function readingsOutboxWriter(db: Database, now: () => number = Date.now): ReadingsObserver {
  const insert: Statement = db.prepare(
    `INSERT INTO sync_outbox (kind, at, body) VALUES ('${READINGS_KIND}', ?, ?)`,
  );
  return (rows) => {
    const at = now();
    let carried: (typeof rows)[number][] | undefined;
    let lastId: string | undefined;
    for (let i = 0; i < rows.length; i++) {
      const id = rows[i]![0];
      if (id === lastId) continue;
      if (READING_NODE_ID.test(id)) {
        lastId = id;
        continue;
      }
      // Rare: copy what can be carried, leaving this row (and any other like it) out.
      carried ??= rows.slice(0, i);
      for (let k = i + 1; k < rows.length; k++) if (READING_NODE_ID.test(rows[k]![0])) carried.push(rows[k]!);
      break;
    }
    const out = carried ?? rows;
    for (let from = 0; from < out.length; from += MAX_READINGS_ROWS) {
      const chunk =
        from === 0 && out.length <= MAX_READINGS_ROWS ? out : out.slice(from, from + MAX_READINGS_ROWS);
      insert.run(at, JSON.stringify({ rows: chunk }));
    }
  };
}

/** The observer registered on each database while its outbox is enabled, to unregister it. */
const registered = new WeakMap<Database, () => void>();

/**
 * Migrates the 'sync' component, (re)creates every outbox trigger — on the core tables always,
 * on the audit plugin's tables only when they exist (call it again after a plugin migrated its
 * tables) — and registers the readings observer on `db` (once, however often this is called).
 * Idempotent; call it on every start while sync is configured, before anything writes readings.
 */
export function enableOutbox(db: Database): void {
  migrateSyncTables(db);
  db.transaction(() => {
    // Dropped and created again, so a newer meshhub's trigger definitions replace older ones
    // (the readings triggers of before are dropped here for good).
    for (const name of outboxTriggers(db)) db.exec(`DROP TRIGGER IF EXISTS "${name}"`);
    const tables = existingTables(db);
    for (const group of TRIGGER_GROUPS) {
      if (!group.tables.every((t) => tables.has(t))) continue;
      for (const t of group.triggers) db.exec(t.sql);
    }
  }).immediate();
  if (!registered.has(db)) registered.set(db, observeStoredReadings(db, readingsOutboxWriter(db)));
}

/** True while `db` has the readings observer (enableOutbox ran, disableOutbox did not since). */
export function outboxObservesReadings(db: Database): boolean {
  return registered.has(db);
}

/**
 * Drops every outbox trigger and unregisters the readings observer (sync no longer configured):
 * nothing more is written to the outbox. Keeps the tables, so the cursor and what was not yet
 * pushed survive a later re-enable.
 */
export function disableOutbox(db: Database): void {
  registered.get(db)?.();
  registered.delete(db);
  db.transaction(() => {
    for (const name of outboxTriggers(db)) db.exec(`DROP TRIGGER IF EXISTS "${name}"`);
  }).immediate();
}
