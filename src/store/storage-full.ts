/**
 * The store's disk is full (or the database reached its size cap): SQLite answers SQLITE_FULL
 * (`database or disk is full`) to the write, which changes nothing, and writes work again once
 * there is room (issue 17, "Disk full"). Callers tell the writer of the data that it was not
 * stored (HTTP 507, MQTT without PUBACK) and report the hub `degraded` meanwhile.
 */
export function isStorageFull(error: unknown): boolean {
  // better-sqlite3's SqliteError carries the extended result code in `code`.
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_FULL');
}

/** The detail every answer about a full disk gives: what happened and what to do. */
export const STORAGE_FULL_DETAIL =
  "the hub's storage is full: nothing was stored; free space on the hub's disk (or raise its size limit) and send it again";
