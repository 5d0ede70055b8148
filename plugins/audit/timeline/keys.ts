/**
 * Pivot keys (issue 29, an actor's timeline): an event's client IP, correlation id, session id
 * and exact target, one row each in `audit_event_keys (kind, value, ts, seq)` — like tags in
 * `audit_event_tags` (store/schema.ts), so "the other events with this key" is one index walk
 * in (value, ts) order, newest first, whatever the store's size.
 *
 * Kinds are small integers (one byte a row on disk); their names are the API's.
 */
import type { Database, Statement } from '../../../src/store/database.js';
import { type NormalizedEvent, pivotFields } from '../normalize.js';
import { isSourceName } from '../sources.js';

export const KEY_KINDS = { client_ip: 1, correlation_id: 2, session_id: 3, target: 4 } as const;
export type KeyName = keyof typeof KEY_KINDS;
export const KEY_NAMES = Object.keys(KEY_KINDS) as KeyName[];

type Keyed = Pick<NormalizedEvent, 'clientIp' | 'correlationId' | 'sessionId' | 'target'>;

/** The (kind, value) pairs an event is found by. */
export function keysOf(e: Keyed): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  if (e.clientIp) out.push([KEY_KINDS.client_ip, e.clientIp]);
  if (e.correlationId) out.push([KEY_KINDS.correlation_id, e.correlationId]);
  if (e.sessionId) out.push([KEY_KINDS.session_id, e.sessionId]);
  if (e.target) out.push([KEY_KINDS.target, e.target]);
  return out;
}

/** Writes an event's keys; call inside the writer's transaction. */
export function keyWriter(db: Database): (seq: number, ts: number, e: Keyed) => void {
  const insert: Statement = db.prepare(
    'INSERT OR IGNORE INTO audit_event_keys (kind, value, ts, seq) VALUES (?, ?, ?, ?)',
  );
  return (seq, ts, e) => {
    for (const [kind, value] of keysOf(e)) insert.run(kind, value, ts, seq);
  };
}

/** One event's keys by name (the drawer's pivots); only the keys it carries. */
export function eventKeys(db: Database, seq: number): Partial<Record<KeyName, string>> {
  const rows = db
    .prepare('SELECT kind, value FROM audit_event_keys INDEXED BY audit_event_keys_seq WHERE seq = ?')
    .raw(true)
    .all(seq) as Array<[number, string]>;
  const out: Partial<Record<KeyName, string>> = {};
  for (const [kind, value] of rows) {
    const name = KEY_NAMES.find((n) => KEY_KINDS[n] === kind);
    if (name) out[name] = value;
  }
  return out;
}

const BACKFILL_BATCH = 5_000;

/**
 * The migration's backfill: every stored event's keys, read from its raw record with the same
 * extraction new events go through (normalize.ts pivotFields), a batch of events at a time.
 */
export function backfillEventKeys(db: Database): void {
  const select = db
    .prepare(
      `SELECT e.seq, e.ts, e.source, e.target, r.raw FROM audit_events e
       LEFT JOIN audit_event_raw r ON r.seq = e.seq WHERE e.seq > ? ORDER BY e.seq LIMIT ${BACKFILL_BATCH}`,
    )
    .raw(true);
  const write = keyWriter(db);
  let after = 0;
  for (;;) {
    const rows = select.all(after) as Array<[number, number, string, string, string | null]>;
    for (const [seq, ts, source, target, raw] of rows) {
      let record: unknown;
      try {
        record = raw ? JSON.parse(raw) : undefined;
      } catch {
        record = undefined;
      }
      const pivots = isSourceName(source) ? pivotFields(source, record) : {};
      write(seq, ts, { ...pivots, target } as Keyed);
    }
    if (rows.length < BACKFILL_BATCH) return;
    after = rows[rows.length - 1]![0];
  }
}
