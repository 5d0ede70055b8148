/**
 * The audit plugin's tables, as component migrations (src/store/component-migrations.ts): the
 * hub's core schema version never depends on whether the plugin is on.
 *
 * Layout, for 1,000,000 events on a Pi:
 * - `audit_events` is narrow: integer ids for operation, result and actor (dictionaries), so
 *   index pages hold many rows and a filter compares integers. The raw upstream record lives
 *   in `audit_event_raw`, read only for a single event.
 * - Every filter has an index ending in `ts` (and, implicitly, `seq`): an equality filter walks
 *   its index already in (timestamp, id) order, so keyset pages never sort.
 * - `audit_event_tags` repeats `ts` so a tag filter walks (tag, ts, seq) in order too; the
 *   `tags` column keeps the event's list for output.
 * - Dictionaries keep a `folded` (lower-cased) copy: substring filters are `instr` over a few
 *   thousand names, never a pattern over a million rows.
 */
import type { ComponentMigration } from '../../../src/store/component-migrations.js';

export const AUDIT_COMPONENT = 'audit';

export const AUDIT_MIGRATIONS: readonly ComponentMigration[] = [
  {
    version: 1,
    name: 'events, dictionaries, tags, comments, raw records, sources, content blobs, audit trail',
    up: `
      CREATE TABLE audit_actors (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        folded TEXT NOT NULL
      );
      CREATE TABLE audit_operations (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        folded TEXT NOT NULL
      );
      -- raw: the upstream value as sent ('' when absent); normalized: success | failure | unknown.
      CREATE TABLE audit_results (
        id INTEGER PRIMARY KEY,
        raw TEXT NOT NULL UNIQUE,
        normalized TEXT NOT NULL,
        folded TEXT NOT NULL
      );

      -- ts: ms UTC. source_key: the source's own record id (dedupe key, unique per source).
      CREATE TABLE audit_events (
        seq INTEGER PRIMARY KEY,
        source TEXT NOT NULL,
        source_key TEXT NOT NULL,
        ts INTEGER NOT NULL,
        service TEXT NOT NULL,
        operation_id INTEGER NOT NULL,
        result_id INTEGER NOT NULL,
        actor_id INTEGER NOT NULL,
        target TEXT NOT NULL DEFAULT '',
        tags TEXT NOT NULL DEFAULT '[]',
        comment_count INTEGER NOT NULL DEFAULT 0,
        ingested_at INTEGER NOT NULL,
        UNIQUE (source, source_key)
      );
      CREATE INDEX audit_events_ts ON audit_events (ts);
      CREATE INDEX audit_events_service_ts ON audit_events (service, ts);
      CREATE INDEX audit_events_actor_ts ON audit_events (actor_id, ts);
      CREATE INDEX audit_events_operation_ts ON audit_events (operation_id, ts);
      CREATE INDEX audit_events_result_ts ON audit_events (result_id, ts);

      CREATE TABLE audit_event_raw (
        seq INTEGER PRIMARY KEY REFERENCES audit_events (seq) ON DELETE CASCADE,
        raw TEXT NOT NULL
      );

      CREATE TABLE audit_event_tags (
        tag TEXT NOT NULL,
        ts INTEGER NOT NULL,
        seq INTEGER NOT NULL REFERENCES audit_events (seq) ON DELETE CASCADE,
        PRIMARY KEY (tag, ts, seq)
      ) WITHOUT ROWID;
      CREATE INDEX audit_event_tags_seq ON audit_event_tags (seq, tag);

      CREATE TABLE audit_event_comments (
        id INTEGER PRIMARY KEY,
        seq INTEGER NOT NULL REFERENCES audit_events (seq) ON DELETE CASCADE,
        author TEXT NOT NULL,
        author_subject TEXT,
        text TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX audit_event_comments_seq ON audit_event_comments (seq);

      -- One row per source: the watermark (ms UTC) and the health shown in /api/source-health.
      CREATE TABLE audit_sources (
        source TEXT PRIMARY KEY,
        watermark INTEGER,
        status TEXT NOT NULL DEFAULT 'pending',
        last_attempt_time INTEGER,
        last_success_time INTEGER,
        last_error TEXT,
        consecutive_failures INTEGER NOT NULL DEFAULT 0,
        events_fetched INTEGER NOT NULL DEFAULT 0,
        events_stored INTEGER NOT NULL DEFAULT 0,
        duplicates INTEGER NOT NULL DEFAULT 0,
        malformed INTEGER NOT NULL DEFAULT 0,
        throttled INTEGER NOT NULL DEFAULT 0,
        errors INTEGER NOT NULL DEFAULT 0
      ) WITHOUT ROWID;

      -- Office 365 content blobs: done (skip when listed again) or pending (retry until expiry).
      CREATE TABLE audit_content_blobs (
        source TEXT NOT NULL,
        content_id TEXT NOT NULL,
        content_uri TEXT NOT NULL,
        content_created INTEGER NOT NULL,
        content_expiration INTEGER NOT NULL,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        last_error TEXT,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (source, content_id)
      ) WITHOUT ROWID;
      CREATE INDEX audit_content_blobs_pending ON audit_content_blobs (source, state, content_created);

      -- The internal audit trail: every mutating request with the verified caller.
      CREATE TABLE audit_trail (
        id INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        request_id TEXT,
        method TEXT NOT NULL,
        path TEXT NOT NULL,
        route TEXT,
        status INTEGER NOT NULL,
        subject TEXT,
        username TEXT,
        issuer TEXT,
        roles TEXT NOT NULL DEFAULT '[]',
        client_ip TEXT,
        detail TEXT
      );
      CREATE INDEX audit_trail_at ON audit_trail (at);
    `,
  },
];
