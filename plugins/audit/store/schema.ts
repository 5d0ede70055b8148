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
import type { Database } from '../../../src/store/database.js';
import { backfillEventKeys } from '../timeline/keys.js';
import { ACTOR_DAYS_TABLE, backfillActorDays } from './actor-days.js';

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
  {
    version: 2,
    name: 'ask and explain cache, background ask jobs (issue 13)',
    up: `
      -- The cache store without CACHE_URL: values by key until expires_at (ms UTC).
      CREATE TABLE audit_cache (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX audit_cache_expires ON audit_cache (expires_at);

      -- Background asks: queued -> running -> succeeded | failed; owner is the creating caller.
      CREATE TABLE audit_jobs (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        status TEXT NOT NULL,
        request TEXT NOT NULL,
        result TEXT,
        error TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX audit_jobs_status ON audit_jobs (status, created_at);
      CREATE INDEX audit_jobs_expires ON audit_jobs (expires_at);
    `,
  },
  {
    version: 3,
    name: 'issue 14: plugin state (Graph subscription, checkpoints), alert rules and alerts',
    up: `
      -- Small named values the plugin keeps across restarts (JSON).
      CREATE TABLE audit_state (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at INTEGER NOT NULL
      ) WITHOUT ROWID;

      CREATE TABLE audit_alert_rules (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        name_folded TEXT NOT NULL UNIQUE,
        description TEXT NOT NULL DEFAULT '',
        severity TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        condition TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        created_by TEXT,
        updated_by TEXT
      );

      -- A rule's firing: the rule as it was, the key (actor or '*'), the event that tipped it.
      CREATE TABLE audit_alerts (
        id INTEGER PRIMARY KEY,
        rule_id INTEGER NOT NULL,
        rule_name TEXT NOT NULL,
        severity TEXT NOT NULL,
        fired_at INTEGER NOT NULL,
        alert_key TEXT NOT NULL,
        event_seq INTEGER NOT NULL,
        event_ts INTEGER NOT NULL,
        match_count INTEGER NOT NULL,
        window_ms INTEGER NOT NULL,
        detail TEXT NOT NULL,
        delivery TEXT NOT NULL DEFAULT 'none'
      );
      CREATE INDEX audit_alerts_fired ON audit_alerts (fired_at, id);
      CREATE INDEX audit_alerts_rule ON audit_alerts (rule_id, fired_at, id);
      CREATE INDEX audit_alerts_key ON audit_alerts (rule_id, alert_key, event_ts);
    `,
  },
  {
    version: 4,
    name: 'issue 14: threshold matches of alert rules',
    up: `
      -- One row per event matching a threshold rule (count > 1), by key (actor or '*'); kept for
      -- two of the rule's windows, dropped when the rule changes.
      CREATE TABLE audit_alert_matches (
        rule_id INTEGER NOT NULL,
        alert_key TEXT NOT NULL,
        ts INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (rule_id, alert_key, ts, seq)
      ) WITHOUT ROWID;
      CREATE INDEX audit_alert_matches_ts ON audit_alert_matches (rule_id, ts);
    `,
  },
  {
    version: 5,
    name: 'issue 14: SIEM delivery checkpoint and rejected events',
    up: `
      -- One row per SIEM sink: everything up to last_seq was accepted by the receiver (at-least-once).
      CREATE TABLE audit_siem_delivery (
        sink TEXT PRIMARY KEY,
        last_seq INTEGER NOT NULL,
        delivered INTEGER NOT NULL DEFAULT 0,
        rejected INTEGER NOT NULL DEFAULT 0,
        failures INTEGER NOT NULL DEFAULT 0,
        consecutive_failures INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL DEFAULT 'idle',
        last_error TEXT,
        last_attempt_at INTEGER,
        last_success_at INTEGER,
        updated_at INTEGER NOT NULL
      ) WITHOUT ROWID;

      -- Events the receiver refused on their own (a 4xx for that one event): skipped, kept here.
      CREATE TABLE audit_siem_rejected (
        sink TEXT NOT NULL,
        seq INTEGER NOT NULL,
        status INTEGER NOT NULL,
        reason TEXT NOT NULL,
        rejected_at INTEGER NOT NULL,
        PRIMARY KEY (sink, seq)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 6,
    name: 'issue 14: the readable audit trail (action, result, counted refusals)',
    up: `
      -- action: what was done (set-tags, create-rule, …); result: success | failure | refused.
      ALTER TABLE audit_trail ADD COLUMN action TEXT NOT NULL DEFAULT 'other';
      ALTER TABLE audit_trail ADD COLUMN result TEXT NOT NULL DEFAULT 'success';
      -- A refusal (401, 403, 429) is one row per hour, client, status, method, route and caller:
      -- refusal_key names it, count says how many, at/last_at the first and the last.
      ALTER TABLE audit_trail ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
      ALTER TABLE audit_trail ADD COLUMN last_at INTEGER;
      ALTER TABLE audit_trail ADD COLUMN refusal_key TEXT;
      UPDATE audit_trail SET
        result = CASE WHEN status < 400 THEN 'success' WHEN status IN (401, 403, 429) THEN 'refused' ELSE 'failure' END,
        action = coalesce(CASE WHEN json_valid(detail) THEN json_extract(detail, '$.action') END, 'other');
      CREATE UNIQUE INDEX audit_trail_refusal_key ON audit_trail (refusal_key) WHERE refusal_key IS NOT NULL;
      CREATE INDEX audit_trail_refusals_at ON audit_trail (at) WHERE refusal_key IS NOT NULL;
    `,
  },
  {
    version: 7,
    name: 'issue 13: covering indexes for counting asks (time and service)',
    up: `
      -- An ask counts up to 50,000 matches and tallies the newest 10,000 by service, operation,
      -- result and actor (event-query.ts count, tally): with every counted column in the index,
      -- that reads no table row. seq is listed so the (ts, seq) keyset order holds.
      CREATE INDEX audit_events_ts_cover ON audit_events (ts, seq, service, operation_id, result_id, actor_id);
      CREATE INDEX audit_events_service_cover ON audit_events (service, ts, seq, operation_id, result_id, actor_id);
    `,
  },
  {
    version: 8,
    name: 'issue 29: tenants; events carry their tenant, deduplicated per tenant',
    rebuildsTables: true,
    up: `
      -- Tenants by the operator's short name (AUDIT_TENANTS); a single-tenant hub's is 'default'.
      CREATE TABLE audit_tenants (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        folded TEXT NOT NULL
      );
      INSERT INTO audit_tenants (id, name, folded) VALUES (1, 'default', 'default');

      -- The dedupe key gains the tenant: two tenants may log the same record id (a guest's
      -- sign-in is in its home and its resource tenant). A UNIQUE constraint cannot be altered,
      -- so the table is rebuilt (foreign keys are off around this migration: nothing cascades).
      CREATE TABLE audit_events_v8 (
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
        tenant_id INTEGER NOT NULL DEFAULT 1,
        UNIQUE (tenant_id, source, source_key)
      );
      INSERT INTO audit_events_v8
        (seq, source, source_key, ts, service, operation_id, result_id, actor_id, target, tags,
         comment_count, ingested_at, tenant_id)
        SELECT seq, source, source_key, ts, service, operation_id, result_id, actor_id, target, tags,
          comment_count, ingested_at, 1
        FROM audit_events;
      DROP TABLE audit_events;
      ALTER TABLE audit_events_v8 RENAME TO audit_events;
      CREATE INDEX audit_events_ts ON audit_events (ts);
      CREATE INDEX audit_events_service_ts ON audit_events (service, ts);
      -- An actor's timeline (timeline/) counts every event of the actor in its window by day,
      -- service and result: with those columns (and what privacy filters on) in the index it
      -- reads no table row, and the actor filter of a search walks it in keyset order.
      CREATE INDEX audit_events_actor_cover ON audit_events (actor_id, ts, seq, service, operation_id, result_id, tenant_id);
      CREATE INDEX audit_events_operation_ts ON audit_events (operation_id, ts);
      CREATE INDEX audit_events_result_ts ON audit_events (result_id, ts);
      CREATE INDEX audit_events_ts_cover ON audit_events (ts, seq, service, operation_id, result_id, actor_id);
      CREATE INDEX audit_events_service_cover ON audit_events (service, ts, seq, operation_id, result_id, actor_id);
      -- A caller limited to some tenants (AUDIT_ROLE_TENANTS) walks one (tenant_id, ts, seq)
      -- stream per tenant (event-query.ts); with the counted columns in the index, an ask's count
      -- and tally read no table row, as the ts and service covers do.
      CREATE INDEX audit_events_tenant_cover ON audit_events (tenant_id, ts, seq, service, operation_id, result_id, actor_id);
    `,
  },
  {
    version: 9,
    name: 'issue 29: saved searches',
    up: `
      -- A named search (plugins/audit/saved/): the filters as the search API takes its parameters
      -- (JSON, validated by the API's filter schema), a relative range as "last". owner is the
      -- verified caller (issuer and subject), owner_name what it is called; shared_role, when set, a
      -- reader or admin role whose holders see it too.
      CREATE TABLE audit_saved_searches (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        name_folded TEXT NOT NULL,
        owner TEXT NOT NULL,
        owner_name TEXT NOT NULL,
        shared_role TEXT,
        filters TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE UNIQUE INDEX audit_saved_searches_name ON audit_saved_searches (owner, name_folded);
      CREATE INDEX audit_saved_searches_role ON audit_saved_searches (shared_role) WHERE shared_role IS NOT NULL;
    `,
  },
  {
    version: 10,
    name: 'issue 29: pivot keys (client IP, correlation id, session id, exact target), backfilled',
    up: (db: Database) => {
      db.exec(`
        -- kind: 1 client IP, 2 correlation id, 3 session id, 4 target (timeline/keys.ts). ts is
        -- repeated, as in audit_event_tags, so a pivot walks (kind, value, ts, seq) in order.
        CREATE TABLE audit_event_keys (
          kind INTEGER NOT NULL,
          value TEXT NOT NULL,
          ts INTEGER NOT NULL,
          seq INTEGER NOT NULL REFERENCES audit_events (seq) ON DELETE CASCADE,
          PRIMARY KEY (kind, value, ts, seq)
        ) WITHOUT ROWID;
        CREATE INDEX audit_event_keys_seq ON audit_event_keys (seq);
      `);
      backfillEventKeys(db);
    },
  },
  {
    version: 11,
    name: 'issue 29: watermarks, health and content blobs per tenant',
    up: `
      -- One row per (tenant, source): each tenant has its own watermark and health. Existing rows
      -- are the 'default' tenant's (id 1). The primary key changes, so both tables are rebuilt
      -- (nothing references them).
      CREATE TABLE audit_sources_v9 (
        tenant_id INTEGER NOT NULL DEFAULT 1,
        source TEXT NOT NULL,
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
        errors INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (tenant_id, source)
      ) WITHOUT ROWID;
      INSERT INTO audit_sources_v9
        (tenant_id, source, watermark, status, last_attempt_time, last_success_time, last_error,
         consecutive_failures, events_fetched, events_stored, duplicates, malformed, throttled, errors)
        SELECT 1, source, watermark, status, last_attempt_time, last_success_time, last_error,
          consecutive_failures, events_fetched, events_stored, duplicates, malformed, throttled, errors
        FROM audit_sources;
      DROP TABLE audit_sources;
      ALTER TABLE audit_sources_v9 RENAME TO audit_sources;

      CREATE TABLE audit_content_blobs_v9 (
        tenant_id INTEGER NOT NULL DEFAULT 1,
        source TEXT NOT NULL,
        content_id TEXT NOT NULL,
        content_uri TEXT NOT NULL,
        content_created INTEGER NOT NULL,
        content_expiration INTEGER NOT NULL,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        last_error TEXT,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, source, content_id)
      ) WITHOUT ROWID;
      INSERT INTO audit_content_blobs_v9
        (tenant_id, source, content_id, content_uri, content_created, content_expiration, state,
         attempts, last_error, updated_at)
        SELECT 1, source, content_id, content_uri, content_created, content_expiration, state,
          attempts, last_error, updated_at
        FROM audit_content_blobs;
      DROP TABLE audit_content_blobs;
      ALTER TABLE audit_content_blobs_v9 RENAME TO audit_content_blobs;
      CREATE INDEX audit_content_blobs_pending ON audit_content_blobs (tenant_id, source, state, content_created);
    `,
  },
  {
    version: 12,
    name: "issue 29: an actor's events per day, tenant, service and operation (the timeline's counts); actors by folded name",
    up: (db: Database) => {
      // actor-days.ts: the rollup, counted from the events already stored; the writer and the
      // maintenance keep it exact from here on.
      db.exec(ACTOR_DAYS_TABLE);
      backfillActorDays(db);
      // The timeline finds its actor by exact name (folded) twice a request: an index step, not
      // a pass over every actor.
      db.exec('CREATE INDEX audit_actors_folded ON audit_actors (folded)');
    },
  },
  {
    version: 13,
    name: 'issue 29: every covering index carries the tenant; results get one; the indexes the covering ones made redundant go',
    // The search lets the rarer of its filters drive (event-query.ts `driver`): a result stream
    // must then check the service, actor and tenant on the index entry, as the others do, and a
    // tenant-limited role's reads check the tenant there too. (ts) and (service, ts) are
    // prefixes of the covering indexes: about 40 bytes an event for nothing.
    up: `
      DROP INDEX audit_events_ts;
      DROP INDEX audit_events_service_ts;
      DROP INDEX audit_events_result_ts;
      DROP INDEX audit_events_ts_cover;
      DROP INDEX audit_events_service_cover;
      CREATE INDEX audit_events_ts_cover ON audit_events (ts, seq, service, operation_id, result_id, actor_id, tenant_id);
      CREATE INDEX audit_events_service_cover ON audit_events (service, ts, seq, operation_id, result_id, actor_id, tenant_id);
      CREATE INDEX audit_events_result_cover ON audit_events (result_id, ts, seq, service, operation_id, actor_id, tenant_id);
    `,
  },
];
