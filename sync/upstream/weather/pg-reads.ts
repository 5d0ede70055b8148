/**
 * The upstream's read API over PostgreSQL: sites, latest readings, history and nodes, written
 * exactly as the hub writes them (readings by the shared writer of src/weather/weather-reads.ts,
 * nodes as src/nodes/routes.ts) plus a `site_id` on every item, so a client reads the upstream
 * like a hub with one more dimension.
 *
 * - Readings: `timestamp` ISO 8601 UTC with Z, absent metrics left out, `wind_direction` in
 *   whole degrees [0, 360); bucket means are sum / count to 6 decimals, wind direction the
 *   circular mean from the sin/cos sums (src/store/rollups.ts), left out when they cancel out.
 * - A node heard by two sites has a row at each: latest answers one Reading per (site, node),
 *   ordered by node_id then site_id; nodes likewise.
 * - History reads one site's series. Without `site`, the site that heard the node most recently
 *   (the newest of its `nodes.last_heard` and its newest reading) is used, and the paging
 *   cursor remembers that site, so every page of one walk comes from the same site.
 *
 * Every query is bounded (LIMIT); times in the database are BIGINT ms (node-postgres gives them
 * as strings, read with Number: ms since the epoch stay far below 2^53).
 */
import type pg from 'pg';
import type { SiteJson } from '../../../src/domain/site.js';
import { BUCKET_MS, METRIC_COLUMNS, ROLLUP_TABLE } from '../../../src/store/rollups.js';
import type { HistoryPage, HistoryQuery, WeatherReads } from '../../../src/weather/weather-reads.js';
import {
  bucketJson,
  bucketLower,
  bucketMeanColumns,
  EMPTY_BODY,
  pageOf,
  rawLower,
  readingJson,
} from '../../../src/weather/weather-reads.js';
import { UpstreamHistoryCache } from '../history-cache.js';
import type { HistoryChangeFeed } from '../history-changes.js';

/** Bound on latest and nodes answers (one row per site and node). */
export const MAX_LISTED_ROWS = 10_000;
export const MAX_LISTED_SITES = 10_000;

/** A Reading as the hub writes it, plus the site that stored it. */
export type UpstreamReadingJson = {
  node_id: string;
  site_id: string;
  timestamp: string;
} & Partial<Record<(typeof METRIC_COLUMNS)[number], number>>;

export interface UpstreamNodeJson {
  node_id: string;
  site_id: string;
  short_name?: string;
  long_name?: string;
  hw_model?: string;
  latitude?: number;
  longitude?: number;
  altitude?: number;
  last_heard?: string;
  battery_level?: number;
  snr?: number;
}

/** A node row of the upstream's `nodes` table (or a batch's node record). */
export interface UpstreamNodeRow {
  node_id: string;
  short_name: string | null;
  long_name: string | null;
  hw_model: string | null;
  latitude: number | null;
  longitude: number | null;
  altitude: number | null;
  last_heard: Numeric;
  battery_level: number | null;
  snr: number | null;
}

/** A node as `/api/v1/nodes` writes it: empty names and NULLs left out. */
export function upstreamNodeJson(siteId: string, row: UpstreamNodeRow): UpstreamNodeJson {
  const out: UpstreamNodeJson = { node_id: row.node_id, site_id: siteId };
  // Empty names are unknown names, as on the hub (nodes-repository.ts).
  if (row.short_name) out.short_name = row.short_name;
  if (row.long_name) out.long_name = row.long_name;
  if (row.hw_model) out.hw_model = row.hw_model;
  if (row.latitude !== null) out.latitude = row.latitude;
  if (row.longitude !== null) out.longitude = row.longitude;
  if (row.altitude !== null) out.altitude = row.altitude;
  const heard = iso(row.last_heard);
  if (heard !== null) out.last_heard = heard;
  if (row.battery_level !== null) out.battery_level = row.battery_level;
  if (row.snr !== null) out.snr = row.snr;
  return out;
}

/** The hub's history query, of one site's series. */
export interface UpstreamHistoryQuery extends HistoryQuery {
  siteId: string;
}

type Numeric = string | number | null;

function ms(value: Numeric): number | null {
  return value === null ? null : Number(value);
}

function iso(value: Numeric): string | null {
  const at = ms(value);
  return at === null ? null : new Date(at).toISOString();
}

/** Where `/latest` may be narrowed: one site, one node. */
export interface UpstreamLatestFilter {
  siteId?: string;
  nodeId?: string;
}

const LATEST_COLUMNS = ['site_id', 'node_id', 'ts', ...METRIC_COLUMNS].join(', ');
const RAW_COLUMNS = ['ts', ...METRIC_COLUMNS].join(', ');
/** A bucket's start and its means as the shared JSON writer takes them (weather-reads.ts). */
const BUCKET_COLUMNS = `bucket_start, ${bucketMeanColumns((sum, count) => `${sum} / NULLIF(${count}, 0)`)}`;
/**
 * The history cache's one statement per request (history-cache.ts): the site's acknowledged
 * sequence and the oldest time the batches after $2 changed (none looked at for $2 < 0), then
 * the series' buckets from max($4, min($5, that time's bucket)) to $6, at most $7 ($8: the
 * bucket's length). One row with null bucket columns when no bucket is loaded; none when the
 * site is not registered.
 */
const CHECKED_LOAD_SQL = Object.fromEntries(
  (['1h', '1d'] as const).map((interval) => [
    interval,
    `WITH site AS (
       SELECT acked_seq,
         (SELECT min(changed_from) FROM sync_batches b
          WHERE $2::bigint >= 0 AND b.site_id = $1 AND b.first_seq > $2::bigint) AS changed_from
       FROM sites WHERE site_id = $1
     ), checked AS (
       SELECT acked_seq, changed_from,
         GREATEST($4::bigint, LEAST($5::bigint,
           COALESCE(changed_from - ((changed_from % $8::bigint) + $8::bigint) % $8::bigint, $5::bigint))) AS load_from
       FROM site
     )
     SELECT checked.acked_seq, checked.changed_from, checked.load_from, b.*
     FROM checked LEFT JOIN LATERAL (
       SELECT ${BUCKET_COLUMNS} FROM ${ROLLUP_TABLE[interval]}
       WHERE site_id = $1 AND node_id = $3 AND bucket_start >= checked.load_from AND bucket_start < $6::bigint
       ORDER BY bucket_start LIMIT $7
     ) b ON true`,
  ]),
) as Record<'1h' | '1d', string>;

const NODE_COLUMNS =
  'site_id, node_id, short_name, long_name, hw_model, latitude, longitude, altitude, last_heard, battery_level, snr';

/**
 * The upstream's reads: the weather API's over PostgreSQL (WeatherReads: `/latest` narrowed by
 * site and node, one history series per site), and sites and nodes.
 */
export class PgWeatherReads implements WeatherReads<UpstreamLatestFilter, string> {
  private readonly historyCache: UpstreamHistoryCache;

  constructor(
    private readonly pool: pg.Pool,
    private readonly now: () => number = Date.now,
    /** Batches applied by any process, as they commit (history-changes.ts); without it every
     * history request checks with PostgreSQL. */
    historyChanges?: HistoryChangeFeed,
  ) {
    this.historyCache = new UpstreamHistoryCache(
      {
        checkAndLoad: async (siteId, nodeId, interval, q) => {
          // [acked_seq, changed_from, load_from, then BUCKET_COLUMNS]
          const result = await this.pool.query<unknown[]>({
            name: `meshhub-history-${interval}`,
            text: CHECKED_LOAD_SQL[interval],
            values: [siteId, q.seen, nodeId, q.lower, q.from, q.end, q.max, BUCKET_MS[interval]],
            rowMode: 'array',
          });
          const first = result.rows[0];
          if (!first) return { changedFrom: null, loadedFrom: q.lower, rows: [] };
          const rows: Array<[number, string]> = [];
          for (const row of result.rows) {
            if (row[3] === null) continue;
            const start = Number(row[3]);
            rows.push([start, bucketJson(nodeId, start, row, 4, siteId)]);
          }
          return {
            ackedSeq: Number(first[0]),
            changedFrom: first[1] === null ? null : Number(first[1]),
            loadedFrom: Number(first[2]),
            rows,
          };
        },
      },
      undefined,
      historyChanges,
      now,
    );
  }

  /** History requests this process answered with a PostgreSQL query (the rest from memory). */
  get historyQueries(): number {
    return this.historyCache.queries;
  }

  /** Queries that loaded again, at a notification, what a series asked for lately lost. */
  get historyRefills(): number {
    return this.historyCache.refills;
  }

  /**
   * One page of `/history` as the response body: buckets from this process's cache where it is
   * still valid (sync/upstream/history-cache.ts), raw readings straight from PostgreSQL.
   */
  async historyBody(query: UpstreamHistoryQuery): Promise<HistoryPage> {
    if (query.interval === 'raw') return this.history(query);
    return this.historyCache.page(query.siteId, query.nodeId, query.interval, {
      start: query.start,
      end: query.end,
      limit: query.limit,
      ...(query.after === undefined ? {} : { after: query.after }),
    });
  }

  /** Every registered site (revoked ones too, marked), ordered by site_id. */
  async sites(): Promise<SiteJson[]> {
    const result = await this.pool.query<{
      site_id: string;
      name: string | null;
      revoked_at: Numeric;
      acked_seq: Numeric;
      last_contact_at: Numeric;
      stopped_at: Numeric;
      last_batch_at: Numeric;
      last_record_at: Numeric;
      node_count: Numeric;
    }>(
      `SELECT s.site_id, s.name, s.revoked_at, s.acked_seq, s.last_contact_at, s.stopped_at, s.last_batch_at,
              s.last_record_at,
              (SELECT count(*) FROM nodes n WHERE n.site_id = s.site_id) AS node_count
       FROM sites s ORDER BY s.site_id LIMIT ${MAX_LISTED_SITES}`,
    );
    const now = this.now();
    return result.rows.map((row) => {
      const lastRecord = ms(row.last_record_at);
      return {
        site_id: row.site_id,
        name: row.name,
        last_contact_at: iso(row.last_contact_at),
        stopped_at: iso(row.stopped_at),
        last_batch_at: iso(row.last_batch_at),
        // A site clock ahead of ours would give a negative lag: the upstream is not behind then.
        lag_s: lastRecord === null ? null : Math.max(0, Math.round((now - lastRecord) / 1000)),
        acked_seq: Number(row.acked_seq),
        node_count: Number(row.node_count),
        revoked: row.revoked_at !== null,
      };
    });
  }

  historyPage(siteId: string, query: HistoryQuery): Promise<HistoryPage> {
    return this.historyBody({ ...query, siteId });
  }

  /** The `/latest` body: one Reading per (site, node), each field its newest value; ordered by node_id, site_id. */
  async latestBody(filter: UpstreamLatestFilter = {}): Promise<string> {
    const where: string[] = [];
    const args: unknown[] = [];
    if (filter.siteId !== undefined) where.push(`site_id = $${args.push(filter.siteId)}`);
    if (filter.nodeId !== undefined) where.push(`node_id = $${args.push(filter.nodeId)}`);
    const result = await this.pool.query<unknown[]>({
      text: `SELECT ${LATEST_COLUMNS} FROM readings_latest
       ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
       ORDER BY node_id, site_id LIMIT ${MAX_LISTED_ROWS}`,
      values: args,
      rowMode: 'array',
    });
    const parts = result.rows.map((row) =>
      readingJson(row[1] as string, Number(row[2]), row, 3, row[0] as string),
    );
    return `{"data":[${parts.join(',')}]}`;
  }

  /**
   * The site whose series `/history` reads when no `site` is given: the one that heard the node
   * most recently (its `nodes.last_heard` or its newest reading, whichever is newer; ties go to
   * the first site id). Undefined when no site knows the node.
   */
  async mostRecentSiteOf(nodeId: string): Promise<string | undefined> {
    const result = await this.pool.query<{ site_id: string }>(
      `SELECT site_id FROM (
         SELECT site_id, last_heard AS at FROM nodes WHERE node_id = $1 AND last_heard IS NOT NULL
         UNION ALL
         SELECT site_id, ts AS at FROM readings_latest WHERE node_id = $1
       ) heard
       ORDER BY at DESC, site_id LIMIT 1`,
      [nodeId],
    );
    return result.rows[0]?.site_id;
  }

  /** One page of a site's series for a node, read straight from PostgreSQL (no cache). */
  async history(query: UpstreamHistoryQuery): Promise<HistoryPage> {
    const { siteId, nodeId, end, limit, interval } = query;
    if (interval === 'raw') {
      const result = await this.pool.query<unknown[]>({
        text: `SELECT ${RAW_COLUMNS} FROM readings
         WHERE site_id = $1 AND node_id = $2 AND ts >= $3 AND ts < $4
         ORDER BY ts LIMIT $5`,
        values: [siteId, nodeId, rawLower(query), end, limit + 1],
        rowMode: 'array',
      });
      return pageOf(result.rows, limit, (row, ts) => readingJson(nodeId, ts, row, 1, siteId));
    }
    const lower = bucketLower(query, interval);
    if (lower >= end) return { body: EMPTY_BODY };
    const result = await this.pool.query<unknown[]>({
      text: `SELECT ${BUCKET_COLUMNS} FROM ${ROLLUP_TABLE[interval]}
       WHERE site_id = $1 AND node_id = $2 AND bucket_start >= $3 AND bucket_start < $4
       ORDER BY bucket_start LIMIT $5`,
      values: [siteId, nodeId, lower, end, limit + 1],
      rowMode: 'array',
    });
    return pageOf(result.rows, limit, (row, start) => bucketJson(nodeId, start, row, 1, siteId));
  }

  /** Nodes as each site knows them (a node heard by two sites twice), ordered by node_id, site_id. */
  async nodes(filter: { siteId?: string } = {}): Promise<UpstreamNodeJson[]> {
    const args: unknown[] = [];
    const where = filter.siteId !== undefined ? `WHERE site_id = $${args.push(filter.siteId)}` : '';
    const result = await this.pool.query<UpstreamNodeRow & { site_id: string }>(
      `SELECT ${NODE_COLUMNS} FROM nodes ${where} ORDER BY node_id, site_id LIMIT ${MAX_LISTED_ROWS}`,
      args,
    );
    return result.rows.map((row) => upstreamNodeJson(row.site_id, row));
  }
}
