/**
 * The records of a batch other than readings, each kind in bulk (a few multi-row statements over
 * `unnest()` arrays, db/unnest.ts, never one statement per record): nodes, messages and their
 * transitions, subscriptions, audit events, tags and comments; and the sorting of a batch's
 * records by kind. batch-apply.ts runs them inside the batch's transaction.
 */
import type pg from 'pg';
import { type ReadingRow, type RecordBody, type SyncRecord, UPSTREAM_PRINCIPAL_PREFIX } from '../protocol.js';
import { applyRollupRecords } from './apply-readings.js';
import { type ColumnType, unnestRecords, unnestSource } from './db/unnest.js';
import { sendSubscriptionsForNewNodes } from './subscription-fanout.js';

export type RecordsOf<K extends SyncRecord['kind']> = RecordBody<K>[];

export interface Sorted {
  /** Every reading row of the batch in sequence order (`readings` rows, `reading` records). */
  readings: ReadingRow[];
  /** A time in each month the readings and audit events fall in (for their partitions). */
  months: Set<number>;
  rollup: RecordsOf<'rollup'>;
  node: RecordsOf<'node'>;
  message: RecordsOf<'message'>;
  message_transition: RecordsOf<'message_transition'>;
  subscription: RecordsOf<'subscription'>;
  audit_event: RecordsOf<'audit_event'>;
  audit_tags: RecordsOf<'audit_tags'>;
  audit_comment: RecordsOf<'audit_comment'>;
}

function readingRowOf(body: RecordBody<'reading'>): ReadingRow {
  return [
    body.node_id,
    body.ts,
    body.temperature_c,
    body.humidity_percent,
    body.pressure_pa,
    body.wind_speed_ms,
    body.wind_direction,
    body.pm25_ugm3,
    body.pm10_ugm3,
    body.gas_resistance_kohm,
  ];
}

export function sortRecords(records: readonly SyncRecord[]): Sorted {
  const sorted: Sorted = {
    readings: [],
    months: new Set(),
    rollup: [],
    node: [],
    message: [],
    message_transition: [],
    subscription: [],
    audit_event: [],
    audit_tags: [],
    audit_comment: [],
  };
  let ordered = true;
  for (let i = 1; i < records.length && ordered; i++) ordered = records[i - 1]!.seq < records[i]!.seq;
  const inOrder = ordered ? records : [...records].sort((a, b) => a.seq - b.seq);
  // The month of the row before: a month is worked out only when a row leaves it (rows come
  // mostly in time order).
  let from = Number.POSITIVE_INFINITY;
  let to = Number.NEGATIVE_INFINITY;
  const month = (ts: number) => {
    const d = new Date(ts);
    from = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    to = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    sorted.months.add(from);
  };
  const readings = sorted.readings;
  for (const record of inOrder) {
    if (record.kind === 'readings') {
      const rows = record.body.rows;
      for (let i = 0; i < rows.length; i++) {
        const row = rows[i]!;
        readings.push(row);
        const ts = row[1];
        if (ts < from || ts >= to) month(ts);
      }
    } else if (record.kind === 'reading') {
      readings.push(readingRowOf(record.body));
      month(record.body.ts);
    } else {
      if (record.kind === 'audit_event') month(record.body.ts);
      (sorted[record.kind] as unknown[]).push(record.body);
    }
  }
  return sorted;
}

/** Every record of the batch but its readings (Sorted), kind by kind. */
export async function applyRecords(
  client: pg.PoolClient,
  siteId: string,
  r: Sorted,
  now: number,
): Promise<{ messageIds: string[]; nodes: RecordBody<'node'>[] }> {
  // Before the readings' sums are added (endBatch): a bucket the site sent whole takes no more.
  if (r.rollup.length > 0) await applyRollupRecords(client, siteId, r.rollup);
  const nodes = r.node.length > 0 ? await applyNodes(client, siteId, r.node, now) : [];
  const messageIds = r.message.length > 0 ? await applyMessages(client, siteId, r.message, now) : [];
  if (r.message_transition.length > 0) await applyTransitions(client, siteId, r.message_transition);
  if (r.subscription.length > 0) await applySubscriptions(client, siteId, r.subscription);
  if (r.audit_event.length > 0) await applyAuditEvents(client, siteId, r.audit_event, now);
  if (r.audit_tags.length > 0) await applyAuditTags(client, siteId, r.audit_tags);
  if (r.audit_comment.length > 0) await applyAuditComments(client, siteId, r.audit_comment);
  return { messageIds, nodes };
}

// ---- nodes, messages, subscriptions ----

const NODE_COLUMNS: readonly (readonly [keyof RecordBody<'node'>, ColumnType])[] = [
  ['node_id', 'text'],
  ['node_num', 'bigint'],
  ['short_name', 'text'],
  ['long_name', 'text'],
  ['hw_model', 'text'],
  ['latitude', 'float8'],
  ['longitude', 'float8'],
  ['altitude', 'float8'],
  ['last_heard', 'bigint'],
  ['battery_level', 'float8'],
  ['snr', 'float8'],
  ['updated_at', 'bigint'],
];

/** Node rows: the newest `updated_at` wins (the later record on a tie). Returns the batch's newest per node. */
async function applyNodes(
  client: pg.PoolClient,
  siteId: string,
  nodes: RecordsOf<'node'>,
  now: number,
): Promise<RecordBody<'node'>[]> {
  const newest = new Map<string, RecordBody<'node'>>();
  for (const n of nodes) {
    const seen = newest.get(n.node_id);
    if (!seen || n.updated_at >= seen.updated_at) newest.set(n.node_id, n);
  }
  const rows = [...newest.values()].map((n) => NODE_COLUMNS.map(([c]) => n[c]));
  const params: unknown[] = [siteId, now];
  const source = unnestSource(NODE_COLUMNS, rows, params);
  const cols = NODE_COLUMNS.map(([c]) => c);
  const { rows: written } = await client.query<{ node_id: string; inserted: boolean }>(
    `INSERT INTO nodes AS n (site_id, ${cols.join(', ')}, received_at) SELECT $1, ${cols.join(', ')}, $2 FROM ${source}
     ON CONFLICT (site_id, node_id) DO UPDATE SET
       ${[...cols.slice(1), 'received_at'].map((c) => `${c} = EXCLUDED.${c}`).join(', ')}
     WHERE EXCLUDED.updated_at >= n.updated_at
     RETURNING node_id, (xmax = 0) AS inserted`,
    params,
  );
  // The site's first record of a node: the upstream subscriptions covering it go down to it.
  const firstHeard = written.filter((w) => w.inserted).map((w) => w.node_id);
  await sendSubscriptionsForNewNodes(client, siteId, firstHeard, now);
  return [...newest.values()];
}

const MESSAGE_COLUMNS: readonly (readonly [string, ColumnType])[] = [
  ['id', 'uuid'],
  ['subscriber', 'text'],
  ['owner', 'text'],
  ['owner_name', 'text'],
  ['node_id', 'text'],
  ['direction', 'text'],
  ['sender_node_id', 'text'],
  ['target_node_id', 'text'],
  ['text', 'text'],
  ['status', 'text'],
  ['failure_code', 'text'],
  ['failure_reason', 'text'],
  ['created_at', 'bigint'],
  ['updated_at', 'bigint'],
];

/** `read` is final for an inbound text: a late `received` never moves it back. */
function mergeStatus(current: string, incoming: string): string {
  return current === 'read' && incoming === 'received' ? 'read' : incoming;
}

/**
 * Message rows by id: the site's state of the text overwrites ours. A row that exists keeps its
 * origin and subscriber (a text an internet subscriber sent down comes back from the site under
 * owner `upstream:<principal>`; it stays theirs), and an upstream-origin row keeps its owner
 * fields. A new site-origin row owned by `upstream:<principal>` (a reply routed to an internet
 * subscriber) belongs to that subscriber. A row of another site with the same id is left alone.
 * Returns the ids inserted or changed.
 */
async function applyMessages(
  client: pg.PoolClient,
  siteId: string,
  messages: RecordsOf<'message'>,
  now: number,
): Promise<string[]> {
  const last = new Map<string, RecordBody<'message'>>();
  for (const m of messages) {
    const seen = last.get(m.id);
    last.set(m.id, seen ? { ...m, status: mergeStatus(seen.status, m.status) as typeof m.status } : m);
  }
  const rows = [...last.values()].map((m) => [
    m.id,
    m.owner?.startsWith(UPSTREAM_PRINCIPAL_PREFIX) ? m.owner.slice(UPSTREAM_PRINCIPAL_PREFIX.length) : null,
    m.owner,
    m.owner_name,
    m.node_id,
    m.direction,
    m.sender_node_id,
    m.target_node_id,
    m.text,
    m.status,
    m.failure_code,
    m.failure_reason,
    m.created_at,
    m.updated_at,
  ]);
  const params: unknown[] = [siteId, now];
  const source = unnestSource(MESSAGE_COLUMNS, rows, params);
  const cols = MESSAGE_COLUMNS.map(([c]) => c).join(', ');
  const status = `CASE WHEN m.status = 'read' AND EXCLUDED.status = 'received' THEN 'read' ELSE EXCLUDED.status END`;
  const owner = (c: string) => `CASE WHEN m.origin = 'upstream' THEN m.${c} ELSE EXCLUDED.${c} END`;
  const changing = ['sender_node_id', 'target_node_id', 'failure_code', 'failure_reason', 'updated_at'];
  const { rows: changed } = await client.query<{ id: string }>(
    `INSERT INTO messages AS m (site_id, origin, ${cols}, received_at)
     SELECT $1, 'site', ${cols}, $2 FROM ${source}
     ON CONFLICT (id) DO UPDATE SET
       owner = ${owner('owner')}, owner_name = ${owner('owner_name')}, status = ${status},
       ${changing.map((c) => `${c} = EXCLUDED.${c}`).join(', ')}, received_at = EXCLUDED.received_at
     WHERE m.site_id = EXCLUDED.site_id
       AND (m.owner, m.owner_name, m.status, ${changing.map((c) => `m.${c}`).join(', ')})
         IS DISTINCT FROM (${owner('owner')}, ${owner('owner_name')}, ${status}, ${changing.map((c) => `EXCLUDED.${c}`).join(', ')})
     RETURNING id`,
    params,
  );
  return changed.map((r) => r.id);
}

async function applyTransitions(
  client: pg.PoolClient,
  siteId: string,
  transitions: RecordsOf<'message_transition'>,
) {
  const rows = transitions.map((t) => [t.message_id, t.seq, t.status, t.reason, t.at]);
  const params: unknown[] = [siteId];
  const source = unnestSource(
    [
      ['message_id', 'uuid'],
      ['seq', 'integer'],
      ['status', 'text'],
      ['reason', 'text'],
      ['at', 'bigint'],
    ],
    rows,
    params,
  );
  await client.query(
    `INSERT INTO message_transitions (site_id, message_id, seq, status, reason, at)
     SELECT $1, message_id, seq, status, reason, at FROM ${source}
     ON CONFLICT DO NOTHING`,
    params,
  );
}

const SUBSCRIPTION_COLUMNS: readonly (readonly [keyof RecordBody<'subscription'>, ColumnType])[] = [
  ['id', 'bigint'],
  ['subscriber', 'text'],
  ['all_nodes', 'boolean'],
  ['node_ids', 'json'],
  ['status', 'text'],
  ['expires_at', 'bigint'],
  ['source', 'text'],
  ['reference', 'text'],
  ['created_at', 'bigint'],
  ['updated_at', 'bigint'],
];

async function applySubscriptions(client: pg.PoolClient, siteId: string, subs: RecordsOf<'subscription'>) {
  const last = new Map<number, RecordBody<'subscription'>>();
  for (const s of subs) last.set(s.id, s);
  const params: unknown[] = [siteId];
  const source = unnestRecords(SUBSCRIPTION_COLUMNS, last.values(), params);
  const set = [
    'subscriber',
    'all_nodes',
    'node_ids',
    'status',
    'expires_at',
    'source',
    'reference',
    'created_at',
  ];
  await client.query(
    `INSERT INTO site_subscriptions (site_id, id, subscriber, all_nodes, node_ids, status, expires_at, source, reference, created_at, updated_at)
     SELECT $1, id, subscriber, all_nodes, ARRAY(SELECT json_array_elements_text(node_ids)), status, expires_at,
            source, reference, created_at, updated_at
     FROM ${source}
     ON CONFLICT (site_id, id) DO UPDATE SET ${set.map((c) => `${c} = EXCLUDED.${c}`).join(', ')}, updated_at = EXCLUDED.updated_at`,
    params,
  );
}

// ---- audit ----

/** A record without a tenant is from a single-tenant site (or one from before tenants). */
const tenantOf = (body: { tenant?: string | undefined }) => body.tenant ?? 'default';
const auditKey = (body: { tenant?: string | undefined; source: string; source_key: string }) =>
  JSON.stringify([tenantOf(body), body.source, body.source_key]);

/** An audit record's key columns: every audit record is of one event. */
const AUDIT_KEY_COLUMNS = [
  ['tenant', 'text'],
  ['source', 'text'],
  ['source_key', 'text'],
] as const;

const AUDIT_EVENT_COLUMNS: readonly (readonly [string, ColumnType])[] = [
  ...AUDIT_KEY_COLUMNS,
  ['ts', 'bigint'],
  ['service', 'text'],
  ['operation', 'text'],
  ['result', 'text'],
  ['actor', 'text'],
  ['target', 'text'],
  ['tags', 'json'],
  ['raw', 'text'],
  ['ingested_at', 'bigint'],
];

/**
 * Audit events are written once per (tenant, source, source_key), as on the site; `audit_event_keys`
 * says at which `ts` (the partition key) each one lives, for tag changes and comments.
 */
async function applyAuditEvents(
  client: pg.PoolClient,
  siteId: string,
  events: RecordsOf<'audit_event'>,
  now: number,
) {
  const first = new Map<string, RecordBody<'audit_event'>>();
  for (const e of events) if (!first.has(auditKey(e))) first.set(auditKey(e), e);
  const params: unknown[] = [siteId, now];
  const source = unnestRecords(AUDIT_EVENT_COLUMNS, first.values(), params, { tenant: tenantOf });
  // Only events whose key is new (or already at the same ts) are stored: never two rows for one key.
  await client.query(
    `WITH input AS (SELECT * FROM ${source}),
     keyed AS (
       INSERT INTO audit_event_keys (site_id, tenant, source, source_key, ts)
       SELECT $1, tenant, source, source_key, ts FROM input
       ON CONFLICT (site_id, tenant, source, source_key) DO UPDATE SET ts = audit_event_keys.ts
       RETURNING tenant, source, source_key, ts
     )
     INSERT INTO audit_events (site_id, tenant, source, source_key, ts, service, operation, result, actor, target, tags, raw, ingested_at, received_at)
     SELECT $1, i.tenant, i.source, i.source_key, i.ts, i.service, i.operation, i.result, i.actor, i.target,
            ARRAY(SELECT json_array_elements_text(i.tags)), i.raw, i.ingested_at, $2
     FROM input i JOIN keyed k ON k.tenant = i.tenant AND k.source = i.source AND k.source_key = i.source_key AND k.ts = i.ts
     ON CONFLICT DO NOTHING`,
    params,
  );
}

async function applyAuditTags(client: pg.PoolClient, siteId: string, changes: RecordsOf<'audit_tags'>) {
  const last = new Map<string, RecordBody<'audit_tags'>>();
  for (const t of changes) last.set(auditKey(t), t);
  const params: unknown[] = [siteId];
  const columns = [...AUDIT_KEY_COLUMNS, ['tags', 'json']] as const;
  const source = unnestRecords(columns, last.values(), params, { tenant: tenantOf });
  await client.query(
    `UPDATE audit_events e SET tags = ARRAY(SELECT json_array_elements_text(u.tags))
     FROM ${source}
     JOIN audit_event_keys k ON k.site_id = $1 AND k.tenant = u.tenant AND k.source = u.source AND k.source_key = u.source_key
     WHERE e.site_id = $1 AND e.tenant = k.tenant AND e.source = k.source AND e.source_key = k.source_key AND e.ts = k.ts`,
    params,
  );
}

async function applyAuditComments(
  client: pg.PoolClient,
  siteId: string,
  comments: RecordsOf<'audit_comment'>,
) {
  const params: unknown[] = [siteId];
  const columns = [
    ...AUDIT_KEY_COLUMNS,
    ['comment_id', 'bigint'],
    ['author', 'text'],
    ['text', 'text'],
    ['created_at', 'bigint'],
  ] as const;
  const source = unnestRecords(columns, comments, params, { tenant: tenantOf });
  await client.query(
    `INSERT INTO audit_comments (site_id, tenant, source, source_key, comment_id, author, text, created_at)
     SELECT $1, tenant, source, source_key, comment_id, author, text, created_at FROM ${source}
     ON CONFLICT DO NOTHING`,
    params,
  );
}
