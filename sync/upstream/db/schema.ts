/**
 * The upstream's PostgreSQL schema, as ordered migrations (the hub's rule: a released migration
 * never changes; append a new one). migrate.ts runs them under an advisory lock, each in its own
 * transaction with its ledger row.
 *
 * Every table carries `site_id`, and it leads every primary key: the distribution key when one
 * PostgreSQL is no longer enough (Citus: `create_distributed_table('<t>', 'site_id')`). Tables
 * that grow without bound (`readings`, `audit_events`) are partitioned by month on their time
 * column (ms since the epoch); partitions.ts creates them ahead of need, and a DEFAULT partition
 * catches anything outside (a site clock years off). Times are BIGINT ms since the epoch, as on
 * the hub; `received_at` is the upstream's own clock when the record arrived.
 */
import { billingTablesDdl } from '../../../src/billing/billing-tables.js';
import { COLUMN_SEPARATOR, columnsDdl, MESSAGE_TEXT_COLUMNS, SQL_TYPES } from '../../../src/store/ddl.js';
import { latestColumnsDdl, readingColumnsDdl, rollupColumnsDdl } from '../../../src/store/rollups.js';

export interface PgMigration {
  version: number;
  name: string;
  sql: string;
}

/** PostgreSQL's types for the reading tables, whose columns src/store/rollups.ts lists (as the hub's). */
const PG_TYPES = SQL_TYPES.pg;

/** A rollup table per UTC hour / day; its text as migration 1 always had it. */
const rollupTable = (name: string) => `CREATE TABLE ${name} (
        site_id TEXT NOT NULL,
        node_id TEXT NOT NULL,
        bucket_start BIGINT NOT NULL,
        ${rollupColumnsDdl(PG_TYPES).join(COLUMN_SEPARATOR)},
        from_site BOOLEAN NOT NULL DEFAULT false,
        PRIMARY KEY (site_id, node_id, bucket_start)
      );`;

export const PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    name: 'sites, batches, readings (partitioned), rollups, nodes, messages, subscriptions, audit, downlink',
    sql: `
      -- Registered sites: the keys that may sign their requests, and where their sync stands.
      CREATE TABLE sites (
        site_id TEXT PRIMARY KEY,
        name TEXT,
        public_jwks JSONB,              -- registered with --public-key <file>
        jwks_url TEXT,                  -- or --jwks-url <url>
        revoked_at BIGINT,
        created_at BIGINT NOT NULL,
        acked_seq BIGINT NOT NULL DEFAULT 0,
        last_contact_at BIGINT,         -- any signed request (ping, batch, downlink)
        last_batch_at BIGINT,           -- upstream clock
        last_record_at BIGINT,          -- the newest record's own time (site clock): lag
        records_applied BIGINT NOT NULL DEFAULT 0,
        CHECK (public_jwks IS NOT NULL OR jwks_url IS NOT NULL)
      );

      -- Applied batches: a retry of (site_id, first_seq, last_seq) is acknowledged, not applied.
      CREATE TABLE sync_batches (
        site_id TEXT NOT NULL REFERENCES sites (site_id),
        first_seq BIGINT NOT NULL,
        last_seq BIGINT NOT NULL,
        records INTEGER NOT NULL,
        applied_at BIGINT NOT NULL,
        PRIMARY KEY (site_id, first_seq)
      );

      -- Signed request ids seen (replay protection), kept until the token expires.
      CREATE TABLE sync_request_ids (
        site_id TEXT NOT NULL,
        jti TEXT NOT NULL,
        expires_at BIGINT NOT NULL,
        PRIMARY KEY (site_id, jti)
      );
      CREATE INDEX sync_request_ids_expiry ON sync_request_ids (expires_at);

      -- Raw readings, partitioned by month of ts.
      CREATE TABLE readings (
        site_id TEXT NOT NULL,
        node_id TEXT NOT NULL,
        ts BIGINT NOT NULL,
        ${readingColumnsDdl(PG_TYPES).join(COLUMN_SEPARATOR)},
        received_at BIGINT NOT NULL,
        PRIMARY KEY (site_id, node_id, ts)
      ) PARTITION BY RANGE (ts);
      CREATE TABLE readings_default PARTITION OF readings DEFAULT;

      -- Rollups per UTC hour / day, as on the hub (mean = sum / count; wind as sin/cos sums).
      -- from_site: the site sent this bucket whole (its raw readings were dropped from its outbox);
      -- the site's figures then stand and raw readings arriving later for it are not added.
      ${rollupTable('readings_hourly')}
      ${rollupTable('readings_daily')}

      -- Per site and node: each metric's newest value and its time.
      CREATE TABLE readings_latest (
        site_id TEXT NOT NULL,
        node_id TEXT NOT NULL,
        ts BIGINT NOT NULL,
        ${latestColumnsDdl(PG_TYPES).join(COLUMN_SEPARATOR)},
        PRIMARY KEY (site_id, node_id)
      );

      -- Nodes as each site knows them; a node heard by two sites has two rows.
      CREATE TABLE nodes (
        site_id TEXT NOT NULL,
        node_id TEXT NOT NULL,
        node_num BIGINT NOT NULL,
        short_name TEXT,
        long_name TEXT,
        hw_model TEXT,
        latitude DOUBLE PRECISION,
        longitude DOUBLE PRECISION,
        altitude DOUBLE PRECISION,
        last_heard BIGINT,
        battery_level DOUBLE PRECISION,
        snr DOUBLE PRECISION,
        updated_at BIGINT NOT NULL,
        received_at BIGINT NOT NULL,
        PRIMARY KEY (site_id, node_id)
      );
      CREATE INDEX nodes_by_node ON nodes (node_id, last_heard DESC NULLS LAST);

      -- Every text, from the sites (origin 'site') and from internet subscribers here
      -- (origin 'upstream', subscriber = the upstream principal). id: the public id (UUIDv7),
      -- unique across sites.
      CREATE TABLE messages (
        site_id TEXT NOT NULL,
        id UUID NOT NULL,
        origin TEXT NOT NULL CHECK (origin IN ('site', 'upstream')),
        subscriber TEXT,                -- upstream principal whose conversation this is (NULL: site-local)
        owner TEXT,                     -- the owner at the site
        ${columnsDdl(MESSAGE_TEXT_COLUMNS, 'pg')},
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        received_at BIGINT NOT NULL,
        PRIMARY KEY (site_id, id)
      );
      CREATE UNIQUE INDEX messages_id ON messages (id);
      CREATE INDEX messages_conversation ON messages (subscriber, node_id, created_at, id)
        WHERE subscriber IS NOT NULL;

      CREATE TABLE message_transitions (
        site_id TEXT NOT NULL,
        message_id UUID NOT NULL,
        seq INTEGER NOT NULL,
        status TEXT NOT NULL,
        reason TEXT,
        at BIGINT NOT NULL,
        PRIMARY KEY (site_id, message_id, seq)
      );

      -- A subscriber's name for a node (PATCH /conversations/{node_id}).
      CREATE TABLE conversation_nicknames (
        subscriber TEXT NOT NULL,
        node_id TEXT NOT NULL,
        nickname TEXT NOT NULL,
        PRIMARY KEY (subscriber, node_id)
      );

      -- Idempotency-Key of POST /api/v1/messages on the upstream.
      CREATE TABLE idempotency_keys (
        subscriber TEXT NOT NULL,
        key TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        message_id UUID NOT NULL,
        response TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (subscriber, key)
      );

      -- Fixed-window rate limits shared by every upstream process.
      CREATE TABLE rate_windows (
        scope TEXT NOT NULL,            -- 'subscriber:<p>' | 'node:<id>'
        window_start BIGINT NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (scope, window_start)
      );

      -- Subscriptions kept by the sites (mirrored for the operator's view).
      CREATE TABLE site_subscriptions (
        site_id TEXT NOT NULL,
        id BIGINT NOT NULL,
        subscriber TEXT NOT NULL,
        all_nodes BOOLEAN NOT NULL,
        node_ids TEXT[] NOT NULL,
        status TEXT NOT NULL,
        expires_at BIGINT,
        source TEXT NOT NULL,
        reference TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (site_id, id)
      );

      -- The upstream's own subscriptions (operator, billing): what lets an internet subscriber
      -- text a node. Sent down to the sites as 'subscription' commands.
      CREATE TABLE subscriptions (
        id BIGSERIAL PRIMARY KEY,
        subscriber TEXT NOT NULL,
        all_nodes BOOLEAN NOT NULL DEFAULT false,
        node_ids TEXT[] NOT NULL DEFAULT '{}',
        status TEXT NOT NULL CHECK (status IN ('pending', 'active', 'revoked')),
        expires_at BIGINT,
        source TEXT NOT NULL,
        reference TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
      );
      CREATE INDEX subscriptions_by_subscriber ON subscriptions (subscriber, status);

      -- The upstream's local accounts (subscribers and admins), scrypt hashes as on the hub.
      CREATE TABLE users (
        username TEXT PRIMARY KEY,
        password_hash TEXT NOT NULL,
        roles TEXT[] NOT NULL DEFAULT '{}',
        disabled BOOLEAN NOT NULL DEFAULT false,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
      );

      -- Audit events from the sites' audit plugins, partitioned by month of ts.
      CREATE TABLE audit_events (
        site_id TEXT NOT NULL,
        source TEXT NOT NULL,
        source_key TEXT NOT NULL,
        ts BIGINT NOT NULL,
        service TEXT NOT NULL,
        operation TEXT NOT NULL,
        result TEXT NOT NULL,
        actor TEXT NOT NULL,
        target TEXT NOT NULL,
        tags TEXT[] NOT NULL DEFAULT '{}',
        raw TEXT,
        ingested_at BIGINT NOT NULL,
        received_at BIGINT NOT NULL,
        PRIMARY KEY (site_id, source, source_key, ts)
      ) PARTITION BY RANGE (ts);
      CREATE TABLE audit_events_default PARTITION OF audit_events DEFAULT;
      -- Tag changes and comments may arrive for an event whose ts is not in the record:
      -- one row per (site, source, source_key) says where to find it.
      CREATE TABLE audit_event_keys (
        site_id TEXT NOT NULL,
        source TEXT NOT NULL,
        source_key TEXT NOT NULL,
        ts BIGINT NOT NULL,
        PRIMARY KEY (site_id, source, source_key)
      );
      CREATE TABLE audit_comments (
        site_id TEXT NOT NULL,
        source TEXT NOT NULL,
        source_key TEXT NOT NULL,
        comment_id BIGINT NOT NULL,
        author TEXT NOT NULL,
        text TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (site_id, source, source_key, comment_id)
      );

      -- Commands waiting for a site's downlink; acked_at set when the site acknowledged.
      CREATE TABLE downlink (
        id BIGSERIAL PRIMARY KEY,
        site_id TEXT NOT NULL REFERENCES sites (site_id),
        kind TEXT NOT NULL,
        body JSONB NOT NULL,
        created_at BIGINT NOT NULL,
        sent_count INTEGER NOT NULL DEFAULT 0,
        acked_at BIGINT,
        result TEXT,
        reason TEXT
      );
      CREATE INDEX downlink_pending ON downlink (site_id, id) WHERE acked_at IS NULL;
    `,
  },
  {
    version: 2,
    name: 'batches remember the oldest time they changed; downlink keyed by site',
    sql: `
      -- The oldest reading time or rollup bucket a batch changed (NULL: none): every upstream
      -- process's history cache drops the buckets from there on (sync/upstream/read-queries.ts).
      ALTER TABLE sync_batches ADD COLUMN changed_from BIGINT;
      -- site_id leads every key, so the table distributes on it (docs/sync.md "Scaling out").
      ALTER TABLE downlink DROP CONSTRAINT downlink_pkey, ADD PRIMARY KEY (site_id, id);
    `,
  },
  {
    version: 3,
    name: 'billing on the upstream: plans, paid subscriptions, invoices, changes, deliveries',
    sql: `
      -- The billing plugin's tables (src/billing/billing-tables.ts), for billing run on the upstream
      -- (sync/upstream/billing, docs/sync.md "Billing on the upstream"). Keyed by subscriber, not
      -- by site: reference tables on a distributed database. Times are ms since the epoch.
      ${billingTablesDdl('pg')}
    `,
  },
  {
    version: 4,
    name: 'revocable tokens: a token version per user, refresh tokens',
    sql: `
      -- As on a hub (src/store/migrations.ts, version 4; README "Logins and tokens"): tokens
      -- carry their user's token_version, which a password or role change and disabling bump
      -- (sync/upstream/users.ts). 0 for users made before.
      ALTER TABLE users ADD COLUMN token_version INTEGER NOT NULL DEFAULT 0;
      -- Refresh tokens: only their SHA-256, single use, valid at their user's token_version.
      CREATE TABLE refresh_tokens (
        token_hash TEXT PRIMARY KEY,
        username TEXT NOT NULL,
        token_version INTEGER NOT NULL,
        expires_at BIGINT NOT NULL,
        created_at BIGINT NOT NULL
      );
      CREATE INDEX refresh_tokens_by_user ON refresh_tokens (username, created_at);
      CREATE INDEX refresh_tokens_by_expiry ON refresh_tokens (expires_at);
    `,
  },
  {
    version: 5,
    name: 'a site that stops cleanly is offline at once',
    sql: `
      -- When the site last closed its downlink saying it is stopping (sync/upstream/sites.ts
      -- markStopped); a later last_contact_at means it is back.
      ALTER TABLE sites ADD COLUMN stopped_at BIGINT;
    `,
  },
  {
    version: 6,
    name: 'issue 29: audit events carry their Microsoft 365 tenant',
    sql: `
      -- Two tenants of one site may log the same record id: the tenant joins every audit key.
      -- Rows from before are the 'default' tenant's (a single-tenant site's).
      ALTER TABLE audit_events ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';
      ALTER TABLE audit_events DROP CONSTRAINT audit_events_pkey,
        ADD PRIMARY KEY (site_id, tenant, source, source_key, ts);
      ALTER TABLE audit_event_keys ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';
      ALTER TABLE audit_event_keys DROP CONSTRAINT audit_event_keys_pkey,
        ADD PRIMARY KEY (site_id, tenant, source, source_key);
      ALTER TABLE audit_comments ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';
      ALTER TABLE audit_comments DROP CONSTRAINT audit_comments_pkey,
        ADD PRIMARY KEY (site_id, tenant, source, source_key, comment_id);
    `,
  },
];

/** The metric columns (as on the hub: src/store/rollups.ts). */
