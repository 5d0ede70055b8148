/**
 * Reading the internal audit trail (`GET /api/audit-trail` and its export): filters on who
 * (actor), what (action), how it ended (result) and when ([start, end) on the row's `at`), newest
 * first, keyset-paged on (at, id) as the events search is on (ts, seq). A counted refusal row is
 * placed by its first refusal (`at`), so pages stay stable while its count grows.
 */
import type { Database } from '../../../src/store/database.js';
import type { TrailResult, TrailRow } from './audit-trail.js';
import { Where } from './where.js';

export interface TrailFilters {
  /** Case-insensitive substring of the user name or the token's subject. */
  actor?: string;
  actions?: readonly string[];
  results?: readonly TrailResult[];
  /** [start, end) on `at`, ms UTC. */
  start?: number;
  end?: number;
}

export interface TrailPosition {
  at: number;
  id: number;
}

function whereOf(filters: TrailFilters): { where: string[]; params: unknown[] } {
  const where = new Where();
  if (filters.actor !== undefined) {
    const needle = filters.actor.toLowerCase();
    where.add(
      "(instr(lower(coalesce(username, '')), ?) > 0 OR instr(lower(coalesce(subject, '')), ?) > 0)",
      needle,
      needle,
    );
  }
  where
    .anyOf('action', filters.actions)
    .anyOf('result', filters.results)
    .within('at', filters.start, filters.end);
  return { where: where.clauses, params: where.params };
}

export class TrailQuery {
  constructor(private readonly db: Database) {}

  private run(
    filters: TrailFilters,
    extra: string | undefined,
    extraParams: unknown[],
    order: 'ASC' | 'DESC',
    limit: number,
  ): TrailRow[] {
    const { where, params } = whereOf(filters);
    if (extra) where.push(extra);
    const sql = `SELECT * FROM audit_trail ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY at ${order}, id ${order} LIMIT ?`;
    return this.db.prepare(sql).all(...params, ...extraParams, limit) as TrailRow[];
  }

  /** A page, newest first: `next` continues with older rows, `prev` with newer ones. */
  page(
    filters: TrailFilters,
    limit: number,
    cursor?: { direction: 'next' | 'prev'; position: TrailPosition },
  ): { rows: TrailRow[]; next?: TrailPosition; prev?: TrailPosition } {
    const older = (p: TrailPosition, n: number) =>
      this.run(filters, '(at, id) < (?, ?)', [p.at, p.id], 'DESC', n);
    const newer = (p: TrailPosition, n: number) =>
      this.run(filters, '(at, id) > (?, ?)', [p.at, p.id], 'ASC', n);
    const rows =
      cursor?.direction === 'prev'
        ? newer(cursor.position, limit).reverse()
        : cursor
          ? older(cursor.position, limit)
          : this.run(filters, undefined, [], 'DESC', limit);
    const pos = (r: TrailRow): TrailPosition => ({ at: r.at, id: r.id });
    const first = rows[0];
    const last = rows.at(-1);
    return {
      rows,
      ...(last && older(pos(last), 1).length ? { next: pos(last) } : {}),
      ...(first && newer(pos(first), 1).length ? { prev: pos(first) } : {}),
    };
  }

  /** Every matching row, newest first, `size` at a time (one bounded query per chunk), for export. */
  *chunks(filters: TrailFilters, size: number): Generator<TrailRow[], void, undefined> {
    let after: TrailPosition | undefined;
    for (;;) {
      const rows = after
        ? this.run(filters, '(at, id) < (?, ?)', [after.at, after.id], 'DESC', size)
        : this.run(filters, undefined, [], 'DESC', size);
      if (rows.length) yield rows;
      if (rows.length < size) return;
      const last = rows.at(-1)!;
      after = { at: last.at, id: last.id };
    }
  }
}
