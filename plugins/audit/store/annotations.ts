/**
 * What users add to events: tags (one event, or in bulk) and comments (spec "What the service
 * does": tag events single and in bulk, add comments). Every change is one transaction: a
 * refused bulk update changes nothing.
 *
 * Tags live twice: the event's `tags` column (its list, in order, for output) and
 * `audit_event_tags` (for the tag filters' index). Both change together.
 */
import type { Database, Statement } from '../../../src/store/database.js';
import type { EventRow } from './event-query.js';

export const MAX_TAGS_PER_EVENT = 50;

export type BulkTagMode = 'append' | 'replace';

export interface CommentRow {
  id: number;
  seq: number;
  author: string;
  author_subject: string | null;
  text: string;
  created_at: number;
}

export class TooManyTagsError extends Error {
  override readonly name = 'TooManyTagsError';
  constructor(readonly seq: number) {
    super(`an event may carry at most ${MAX_TAGS_PER_EVENT} tags`);
  }
}

export const parseTags = (column: string): string[] =>
  column === '[]' ? [] : (JSON.parse(column) as string[]);

export class Annotations {
  private readonly selectEvent: Statement;
  private readonly selectRaw: Statement;
  private readonly updateTags: Statement;
  private readonly insertTag: Statement;
  private readonly deleteTag: Statement;
  private readonly insertComment: Statement;
  private readonly bumpComments: Statement;
  private readonly selectComments: Statement;

  constructor(private readonly db: Database) {
    this.selectEvent = db.prepare(
      `SELECT seq, ts, source, source_key, service, operation_id, result_id, actor_id, target, tags, comment_count, tenant_id
       FROM audit_events WHERE seq = ?`,
    );
    this.selectRaw = db.prepare('SELECT raw FROM audit_event_raw WHERE seq = ?').pluck();
    this.updateTags = db.prepare('UPDATE audit_events SET tags = ? WHERE seq = ?');
    this.insertTag = db.prepare('INSERT OR IGNORE INTO audit_event_tags (tag, ts, seq) VALUES (?, ?, ?)');
    this.deleteTag = db.prepare('DELETE FROM audit_event_tags WHERE tag = ? AND ts = ? AND seq = ?');
    this.insertComment = db.prepare(
      'INSERT INTO audit_event_comments (seq, author, author_subject, text, created_at) VALUES (?, ?, ?, ?, ?)',
    );
    this.bumpComments = db.prepare('UPDATE audit_events SET comment_count = comment_count + 1 WHERE seq = ?');
    this.selectComments = db.prepare(
      `SELECT id, seq, author, author_subject, text, created_at FROM audit_event_comments
       WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY seq, id`,
    );
  }

  event(seq: number): EventRow | undefined {
    return this.selectEvent.get(seq) as EventRow | undefined;
  }

  raw(seq: number): string | undefined {
    return this.selectRaw.get(seq) as string | undefined;
  }

  /** Replaces one event's tags; returns the updated row, or undefined for an unknown event. */
  setTags(seq: number, tags: readonly string[]): EventRow | undefined {
    return this.db.transaction(() => {
      const row = this.event(seq);
      if (!row) return undefined;
      this.apply(row, [...new Set(tags)]);
      return this.event(seq);
    })();
  }

  /**
   * Tags every row: `append` adds the tags an event lacks, `replace` sets exactly these. Returns
   * how many events changed. Throws TooManyTagsError (nothing changed) when an event would end
   * up with more than MAX_TAGS_PER_EVENT tags.
   */
  bulkTag(rows: readonly EventRow[], tags: readonly string[], mode: BulkTagMode): { updated: number } {
    const wanted = [...new Set(tags)];
    return this.db.transaction(() => {
      let updated = 0;
      for (const row of rows) {
        const current = parseTags(row.tags);
        const next =
          mode === 'replace' ? wanted : [...current, ...wanted.filter((t) => !current.includes(t))];
        if (next.length > MAX_TAGS_PER_EVENT) throw new TooManyTagsError(row.seq);
        if (next.length === current.length && next.every((t, i) => t === current[i])) continue;
        this.apply(row, next, current);
        updated++;
      }
      return { updated };
    })();
  }

  private apply(row: EventRow, next: readonly string[], current = parseTags(row.tags)): void {
    if (next.length > MAX_TAGS_PER_EVENT) throw new TooManyTagsError(row.seq);
    for (const tag of current) if (!next.includes(tag)) this.deleteTag.run(tag, row.ts, row.seq);
    for (const tag of next) if (!current.includes(tag)) this.insertTag.run(tag, row.ts, row.seq);
    this.updateTags.run(JSON.stringify(next), row.seq);
  }

  addComment(
    seq: number,
    comment: { author: string; subject?: string; text: string; at: number },
  ): CommentRow | undefined {
    return this.db.transaction(() => {
      if (!this.event(seq)) return undefined;
      const info = this.insertComment.run(
        seq,
        comment.author,
        comment.subject ?? null,
        comment.text,
        comment.at,
      );
      this.bumpComments.run(seq);
      return {
        id: Number(info.lastInsertRowid),
        seq,
        author: comment.author,
        author_subject: comment.subject ?? null,
        text: comment.text,
        created_at: comment.at,
      };
    })();
  }

  /** Comments of the given events, oldest first, grouped by event. */
  comments(seqs: readonly number[]): Map<number, CommentRow[]> {
    const out = new Map<number, CommentRow[]>();
    if (!seqs.length) return out;
    for (const c of this.selectComments.all(JSON.stringify(seqs)) as CommentRow[]) {
      const list = out.get(c.seq);
      if (list) list.push(c);
      else out.set(c.seq, [c]);
    }
    return out;
  }
}
