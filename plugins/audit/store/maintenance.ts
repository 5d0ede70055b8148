/**
 * The maintenance routine (spec: retention by RETENTION_DAYS; "a maintenance routine removes
 * duplicates"), in bounded chunks with a yield between transactions (docs/architecture.md "Actors" 6).
 *
 * Duplicates: the unique (tenant_id, source, source_key) index keeps the writer from storing an event twice,
 * with keys in their canonical form (normalize.ts `canonicalKey`: trimmed, GUIDs lower-case).
 * A row whose key is not canonical — written by an older version, imported, or restored — may
 * be the same record as a canonical one. The routine walks the table, re-keys such rows, and
 * folds a row into the event it duplicates: its tags and comments move to the survivor, then
 * it is deleted (and taken out of the actor-day counts, actor-days.ts).
 */
import type { Database } from '../../../src/store/database.js';
import { canonicalKey } from '../normalize.js';
import { ActorDays } from './actor-days.js';
import { parseTags } from './annotations.js';
import type { Dictionaries } from './dictionaries.js';

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export interface MaintenanceReport {
  expired: number;
  duplicatesRemoved: number;
  rekeyed: number;
  trailExpired: number;
  blobsForgotten: number;
  namesPruned: number;
}

/**
 * Deletes events older than `cutoff` (ms UTC), `chunk` per transaction; tags, comments and raw
 * records cascade, and the actor-day counts (actor-days.ts) lose them in the same transaction.
 */
export async function deleteExpiredEvents(
  db: Database,
  cutoff: number,
  { chunk = 2_000, onChunk }: { chunk?: number; onChunk?: (deleted: number) => void } = {},
): Promise<number> {
  const oldest = db.prepare('SELECT seq FROM audit_events WHERE ts < ? ORDER BY ts LIMIT ?').pluck();
  const remove = db.prepare('DELETE FROM audit_events WHERE seq IN (SELECT value FROM json_each(?))');
  const actorDays = new ActorDays(db);
  let total = 0;
  for (;;) {
    const deleted = db.transaction(() => {
      const seqs = oldest.all(cutoff, chunk) as number[];
      if (!seqs.length) return 0;
      actorDays.removing(seqs);
      return remove.run(JSON.stringify(seqs)).changes;
    })();
    total += deleted;
    if (deleted) onChunk?.(deleted);
    if (deleted < chunk) return total;
    await yieldToEventLoop();
  }
}

/** Re-keys non-canonical rows and folds duplicates into the canonical row. */
export async function removeDuplicateEvents(
  db: Database,
  chunk = 5_000,
): Promise<{ removed: number; rekeyed: number }> {
  const scan = db.prepare(
    'SELECT seq, tenant_id, source, source_key FROM audit_events WHERE seq > ? ORDER BY seq LIMIT ?',
  );
  const survivor = db.prepare(
    'SELECT seq, ts, tags FROM audit_events WHERE tenant_id = ? AND source = ? AND source_key = ?',
  );
  const tagsOf = db.prepare('SELECT tags FROM audit_events WHERE seq = ?').pluck();
  const setTags = db.prepare('UPDATE audit_events SET tags = ? WHERE seq = ?');
  const addTag = db.prepare('INSERT OR IGNORE INTO audit_event_tags (tag, ts, seq) VALUES (?, ?, ?)');
  const moveComments = db.prepare('UPDATE audit_event_comments SET seq = ? WHERE seq = ?');
  const countComments = db.prepare(
    'UPDATE audit_events SET comment_count = (SELECT count(*) FROM audit_event_comments WHERE seq = ?) WHERE seq = ?',
  );
  const remove = db.prepare('DELETE FROM audit_events WHERE seq = ?');
  const rekey = db.prepare('UPDATE audit_events SET source_key = ? WHERE seq = ?');
  const actorDays = new ActorDays(db);

  let removed = 0;
  let rekeyed = 0;
  let after = 0;
  for (;;) {
    const rows = scan.all(after, chunk) as Array<{
      seq: number;
      tenant_id: number;
      source: string;
      source_key: string;
    }>;
    if (!rows.length) break;
    after = rows[rows.length - 1]!.seq;
    const odd = rows.filter(
      (r) => canonicalKey(r.source_key.trim() || undefined, r.source_key) !== r.source_key,
    );
    if (odd.length) {
      db.transaction(() => {
        for (const row of odd) {
          const key = canonicalKey(row.source_key.trim() || undefined, row.source_key);
          const keep = survivor.get(row.tenant_id, row.source, key) as
            | { seq: number; ts: number; tags: string }
            | undefined;
          if (!keep) {
            rekey.run(key, row.seq);
            rekeyed++;
            continue;
          }
          const merged = parseTags(keep.tags);
          for (const tag of parseTags(tagsOf.get(row.seq) as string)) {
            if (!merged.includes(tag)) {
              merged.push(tag);
              addTag.run(tag, keep.ts, keep.seq);
            }
          }
          setTags.run(JSON.stringify(merged), keep.seq);
          moveComments.run(keep.seq, row.seq);
          countComments.run(keep.seq, keep.seq);
          actorDays.removing([row.seq]);
          remove.run(row.seq);
          removed++;
        }
      })();
    }
    await yieldToEventLoop();
  }
  return { removed, rekeyed };
}

/** Drops actor, operation and result names no event refers to any more (after retention). */
export function pruneUnusedNames(db: Database, dictionaries: Dictionaries): number {
  const pruned = db.transaction(() => {
    let n = 0;
    n += db
      .prepare(
        'DELETE FROM audit_actors WHERE NOT EXISTS (SELECT 1 FROM audit_events INDEXED BY audit_events_actor_cover WHERE actor_id = audit_actors.id)',
      )
      .run().changes;
    n += db
      .prepare(
        'DELETE FROM audit_operations WHERE NOT EXISTS (SELECT 1 FROM audit_events INDEXED BY audit_events_operation_ts WHERE operation_id = audit_operations.id)',
      )
      .run().changes;
    n += db
      .prepare(
        'DELETE FROM audit_results WHERE NOT EXISTS (SELECT 1 FROM audit_events INDEXED BY audit_events_result_cover WHERE result_id = audit_results.id)',
      )
      .run().changes;
    return n;
  })();
  if (pruned) dictionaries.clear();
  return pruned;
}

export async function deleteOldTrail(db: Database, cutoff: number, chunk = 5_000): Promise<number> {
  const remove = db.prepare(
    'DELETE FROM audit_trail WHERE id IN (SELECT id FROM audit_trail WHERE at < ? ORDER BY at LIMIT ?)',
  );
  let total = 0;
  for (;;) {
    const n = remove.run(cutoff, chunk).changes;
    total += n;
    if (n < chunk) return total;
    await yieldToEventLoop();
  }
}

/** Forgets fetched or expired content blobs the API can no longer list (7 days after creation). */
export function forgetOldBlobs(db: Database, now: number): number {
  return db
    .prepare("DELETE FROM audit_content_blobs WHERE state != 'pending' AND content_expiration < ?")
    .run(now - 86_400_000).changes;
}

export async function runMaintenance(
  db: Database,
  dictionaries: Dictionaries,
  options: { now: number; retentionDays: number; trailRetentionDays: number },
): Promise<MaintenanceReport> {
  const day = 86_400_000;
  const expired = await deleteExpiredEvents(db, options.now - options.retentionDays * day);
  const { removed, rekeyed } = await removeDuplicateEvents(db);
  const trailExpired = await deleteOldTrail(db, options.now - options.trailRetentionDays * day);
  const blobsForgotten = forgetOldBlobs(db, options.now);
  const namesPruned = pruneUnusedNames(db, dictionaries);
  // Keeps the planner's statistics fresh at these sizes; cheap when nothing changed much.
  db.pragma('optimize');
  return { expired, duplicatesRemoved: removed, rekeyed, trailExpired, blobsForgotten, namesPruned };
}
