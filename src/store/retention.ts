/**
 * Deletes raw readings older than a cutoff, a bounded chunk at a time (docs/architecture.md "Actors" 6:
 * chunk long jobs). `reading_rows` has no rowid and no index on `ts` alone, so a plain
 * `DELETE ... WHERE ts < ?` would scan the whole table inside one long transaction. Instead the
 * job walks the primary key node by node — the next node is one index seek, the old rows of a
 * node are a key range (node_key = ?, ts < ?) — deleting at most `chunkRows` rows per
 * transaction and yielding to the event loop (setImmediate) between transactions.
 * Rollups and the latest rows are kept: history at 1h/1d outlives the raw rows.
 */
import type { Database } from './database.js';

export interface RetentionOptions {
  /** Most rows deleted in one transaction, between two yields to the event loop. */
  chunkRows?: number;
  /** Called after each chunk's transaction, with the rows it deleted. */
  onChunk?: (deleted: number) => void;
  /**
   * A table keyed (`key`, ts): `reading_rows` by node_key (the default), device health's raw
   * samples by node_id.
   */
  table?: string;
  key?: string;
}

/** Nodes looked at in one transaction, so a mesh of many nodes with little to delete stays chunked too. */
const MAX_NODES_PER_CHUNK = 500;

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export async function deleteReadingsOlderThan(
  db: Database,
  cutoffMs: number,
  { chunkRows = 5_000, onChunk, table = 'reading_rows', key = 'node_key' }: RetentionOptions = {},
): Promise<number> {
  if (!Number.isFinite(cutoffMs)) throw new RangeError('cutoffMs must be a finite number of milliseconds');
  const limit = Math.max(1, Math.trunc(chunkRows));
  const firstNode = db.prepare(`SELECT ${key} FROM ${table} ORDER BY ${key} LIMIT 1`).pluck(true);
  const nextNode = db
    .prepare(`SELECT ${key} FROM ${table} WHERE ${key} > ? ORDER BY ${key} LIMIT 1`)
    .pluck(true);
  // The ts of a node's n-th oldest expired row: where a chunk that may take n rows ends.
  const nthExpired = db
    .prepare(`SELECT ts FROM ${table} WHERE ${key} = ? AND ts < ? ORDER BY ts LIMIT 1 OFFSET ?`)
    .pluck(true);
  const deleteBefore = db.prepare(`DELETE FROM ${table} WHERE ${key} = ? AND ts < ?`);
  const deleteThrough = db.prepare(`DELETE FROM ${table} WHERE ${key} = ? AND ts <= ?`);

  // One transaction: up to `limit` rows (and a bounded number of nodes visited), moving across
  // nodes in key order. Returns the node to go on with, or undefined at the end of the table.
  const chunk = db.transaction(
    (start: string | number): { deleted: number; next: string | number | undefined } => {
      let node: string | number | undefined = start;
      let deleted = 0;
      for (
        let visited = 0;
        node !== undefined && deleted < limit && visited < MAX_NODES_PER_CHUNK;
        visited++
      ) {
        const room = limit - deleted;
        const end = nthExpired.get(node, cutoffMs, room - 1) as number | undefined;
        if (end === undefined) {
          // Fewer expired rows than there is room for: take them all, then the next node.
          deleted += deleteBefore.run(node, cutoffMs).changes;
          node = nextNode.get(node) as string | number | undefined;
        } else {
          deleted += deleteThrough.run(node, end).changes;
        }
      }
      return { deleted, next: node };
    },
  );

  let total = 0;
  let node = firstNode.get() as string | number | undefined;
  while (node !== undefined) {
    const { deleted, next } = chunk(node);
    total += deleted;
    node = next;
    if (deleted > 0) onChunk?.(deleted);
    if (node !== undefined) await yieldToEventLoop();
  }
  return total;
}
