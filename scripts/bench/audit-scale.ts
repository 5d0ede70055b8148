/**
 * The audit plugin at 10,000,000 events (issue 29 "Performance"): filtered searches, first page
 * and page 50 (via the cursor), p50 ≤ 10 ms; an actor's timeline p50 ≤ 50 ms; bytes on disk per
 * event. `npm run bench -- audit-scale`; AUDIT_SCALE_EVENTS=1000000 for a shorter run.
 *
 * The database: N events over 3 tenants (50/30/20%), 6 services, 300 operations (50 a service,
 * skewed), 20,000 actors with a heavy skew (the busiest few are sync accounts with percents of
 * all events), 5% failures and 2% unknown results, 2% of events tagged `reviewed` and 0.2%
 * `incident`, 90 days; each event with a stored upstream record of Management API shape
 * (~330 bytes). Written straight into the plugin's real schema (its migrations, then rows in
 * transactions of 50,000 with the secondary indexes dropped and rebuilt after, the actor-day
 * rollup counted, then ANALYZE),
 * built once into a file under the OS temp folder named by the audit schema version, the
 * generator's version and N, and reused by later runs (the plugin writes only its trail to it).
 *
 * "Ours" is the plugin's real route (GET /api/events: validation, privacy scope, cursor, JSON)
 * on the hub's real Hono app, called in-process (app.request, no socket). The baseline is the
 * simplest hand-written keyset query for the same page on the same file (better-sqlite3).
 */
import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backfillActorDays } from '../../plugins/audit/store/actor-days.js';
import { openAuditRepositories } from '../../plugins/audit/store/audit-store.js';
import { AUDIT_MIGRATIONS } from '../../plugins/audit/store/schema.js';
import { KEY_KINDS } from '../../plugins/audit/timeline/keys.js';
import type { Actor } from '../../src/kernel/actor.js';
import { closeDatabase, type Database, openDatabase } from '../../src/store/database.js';
import { pluginApp, timeRoute } from './audit.js';
import { prng } from './lib/readings.js';
import { type BenchResult, median, percentile } from './report.js';

const N = Number(process.env.AUDIT_SCALE_EVENTS ?? 10_000_000);
/** Bump when the generator below changes: a new cache file is built. */
const GENERATOR = 4;
/** N as the result names say it: 10M, 0.2M. */
const SIZE = `${N / 1e6}M`;
const ACTORS = 20_000;
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 5, 1);
const SPAN = 90 * DAY;
const REPS = 40;
const PAGE = 50;
const DEEP = 50;
const TENANTS: Array<[string, number]> = [
  ['contoso', 0.5],
  ['fabrikam', 0.3],
  ['northwind', 0.2],
];
const SERVICES: Array<[string, string, number]> = [
  ['Exchange', 'exchange', 0.4],
  ['SharePoint', 'sharepoint', 0.25],
  ['MicrosoftTeams', 'teams', 0.1],
  ['directory', 'directory', 0.15],
  ['device_management', 'device_management', 0.05],
  ['OneDrive', 'sharepoint', 0.05],
];
/** Each service's upper bound in [0, 1): a uniform draw below it and above the previous picks it. */
const CUMULATIVE = SERVICES.map((_, k) => SERVICES.slice(0, k + 1).reduce((sum, s) => sum + s[2], 0));
const OPS_PER_SERVICE = 50;
const FIRST = ['anna', 'ben', 'chloe', 'david', 'emma', 'felix', 'grace', 'hugo', 'iris', 'jonas'];
const LAST = ['smith', 'meier', 'rossi', 'dubois', 'novak', 'kowalski', 'jensen', 'garcia', 'silva', 'berg'];

/** Actor u: the ten busiest are sync accounts; the rest people of one of the tenants' domains. */
const actorName = (u: number, tenant: string) =>
  u < 10
    ? `Sync App ${u}@${tenant}.com`
    : `${FIRST[u % FIRST.length]}.${LAST[Math.floor(u / FIRST.length) % LAST.length]}${u}@${tenant}.com`;
/** The tenant an actor belongs to (by the tenants' weights). */
const tenantOf = (u: number) => {
  const r = ((u * 2654435761) >>> 0) / 4294967296;
  return r < TENANTS[0]![1] ? 0 : r < TENANTS[0]![1] + TENANTS[1]![1] ? 1 : 2;
};

export function cacheFile(): string {
  const schema = AUDIT_MIGRATIONS[AUDIT_MIGRATIONS.length - 1]!.version;
  return join(tmpdir(), `meshhub-audit-scale-s${schema}-g${GENERATOR}-${N}.db`);
}

/** Builds the database into `file` (through a `.partial` file, renamed when complete). */
function build(file: string): void {
  const partial = `${file}.partial`;
  for (const f of [partial, `${partial}-wal`, `${partial}-shm`]) rmSync(f, { force: true });
  const db = openDatabase(partial);
  const t0 = performance.now();
  try {
    const d = openAuditRepositories(db).dictionaries;
    const tenantIds = TENANTS.map(([name]) => d.tenants.idOf(name));
    const actorIds = Array.from({ length: ACTORS }, (_, u) =>
      d.actors.idOf(actorName(u, TENANTS[tenantOf(u)]![0])),
    );
    const results = [
      d.results.idOf('Succeeded', 'success'),
      d.results.idOf('Failed', 'failure'),
      d.results.idOf('', 'unknown'),
    ];
    const services = SERVICES.map(([name, service]) => ({
      name,
      service,
      ops: Array.from({ length: OPS_PER_SERVICE }, (_, o) => d.operations.idOf(`${name}Operation${o}`)),
    }));
    const indexes = db
      .prepare(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('audit_events', 'audit_event_tags', 'audit_event_keys') AND sql IS NOT NULL",
      )
      .all() as Array<{ name: string; sql: string }>;
    for (const i of indexes) db.exec(`DROP INDEX ${i.name}`);
    db.pragma('synchronous = OFF');
    const insert = db.prepare(
      'INSERT INTO audit_events (seq, source, source_key, ts, service, operation_id, result_id, actor_id, target, tags, ingested_at, tenant_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    const raw = db.prepare('INSERT INTO audit_event_raw (seq, raw) VALUES (?, ?)');
    const tag = db.prepare('INSERT INTO audit_event_tags (tag, ts, seq) VALUES (?, ?, ?)');
    // The pivot keys the writer stores (timeline/keys.ts kinds): the client IP and the target.
    const pivotKey = db.prepare('INSERT INTO audit_event_keys (kind, value, ts, seq) VALUES (?, ?, ?, ?)');
    const rand = prng(29);
    const batch = db.transaction((from: number, to: number) => {
      for (let i = from; i < to; i++) {
        const r = rand();
        const s =
          services[
            Math.max(
              0,
              CUMULATIVE.findIndex((c) => r < c),
            )
          ]!;
        const u = Math.floor(rand() ** 3 * ACTORS);
        const tenant = tenantOf(u);
        const op = Math.floor(rand() * rand() * OPS_PER_SERVICE);
        const rr = rand();
        const result = rr < 0.93 ? 0 : rr < 0.98 ? 1 : 2;
        const seq = i + 1;
        const ts = T0 + Math.floor((i / N) * SPAN) + Math.floor(rand() * 1000);
        const tr = rand();
        const tags = tr < 0.002 ? ['incident', 'reviewed'] : tr < 0.02 ? ['reviewed'] : [];
        const key = `${tenant}-${seq.toString(36)}`;
        const target = `https://${TENANTS[tenant]![0]}.sharepoint.com/sites/s${op}/doc-${seq % 5000}.docx`;
        insert.run(
          seq,
          s.service,
          key,
          ts,
          s.service,
          s.ops[op]!,
          results[result]!,
          actorIds[u]!,
          target,
          JSON.stringify(tags),
          ts + 60_000,
          tenantIds[tenant]!,
        );
        raw.run(
          seq,
          `{"CreationTime":"${new Date(ts).toISOString().slice(0, 19)}","Id":"${key}","Operation":"${s.name}Operation${op}","OrganizationId":"${TENANTS[tenant]![0]}-0000-4000-8000-000000000000","RecordType":6,"UserKey":"i:0h.f|membership|${u}","UserType":0,"Workload":"${s.name}","ResultStatus":"${['Succeeded', 'Failed', ''][result]}","ObjectId":"${target}","UserId":"${actorName(u, TENANTS[tenant]![0])}","ClientIP":"10.${u % 200}.${op}.${seq % 250}"}`,
        );
        for (const t of tags) tag.run(t, ts, seq);
        pivotKey.run(KEY_KINDS.client_ip, `10.${u % 200}.${op}.${seq % 250}`, ts, seq);
        pivotKey.run(KEY_KINDS.target, target, ts, seq);
      }
    });
    const STEP = 50_000;
    for (let i = 0; i < N; i += STEP) {
      batch(i, Math.min(N, i + STEP));
      if ((i / STEP) % 20 === 19)
        process.stderr.write(`  ${((i + STEP) / 1e6).toFixed(1)}M events written\n`);
    }
    for (const i of indexes) db.exec(i.sql);
    // The rows went in without the writer: the timeline's per-day counts, counted once.
    backfillActorDays(db);
    db.exec('ANALYZE');
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    closeDatabase(db);
  }
  renameSync(partial, file);
  process.stderr.write(
    `  built ${N.toLocaleString('en')} events in ${((performance.now() - t0) / 1000).toFixed(0)} s\n`,
  );
}

/**
 * The actor's timeline as the console opens it: the route, the window's 90 days ending on the
 * data's last day (`until`: the data are from a fixed span, so the cache is reused across days).
 */
export function actorTimeline(
  app: Awaited<ReturnType<typeof pluginApp>>['app'],
  _db: Database,
  actor: string,
): () => Promise<unknown> {
  const until = new Date(T0 + SPAN - DAY).toISOString().slice(0, 10);
  const path = `/api/actors/timeline?actor=${encodeURIComponent(actor)}&days=90&until=${until}&limit=${PAGE}`;
  return async () => {
    const res = await app.request(path);
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
    return res.json();
  };
}

/** The tenant filter of the search route. */
export function tenantQuery(name: string): string {
  return `tenants=${name}`;
}

interface Case {
  name: string;
  /** The route's query string (undefined: the route cannot express it yet, see the hooks). */
  query: string | undefined;
  /** The same page by hand: WHERE conditions and their parameters. */
  where: string;
  params: unknown[];
}

/** `reps` timings of fn, or fewer (at least 5) once 3 s are spent: a slow baseline stays bounded. */
function timeSync(fn: () => unknown, reps: number): { p50: number; p95: number } {
  const ms: number[] = [];
  const until = performance.now() + 3000;
  for (let i = 0; i < reps && (i < 5 || performance.now() < until); i++) {
    const t = performance.now();
    fn();
    ms.push(performance.now() - t);
  }
  return { p50: median(ms), p95: percentile(ms, 95) };
}

const fmt = (n: number) => n.toFixed(n < 10 ? 2 : 1);

function cases(db: Database): Case[] {
  const failure = db
    .prepare("SELECT id FROM audit_results WHERE normalized = 'failure'")
    .pluck()
    .all() as number[];
  const fail = `result_id IN (${failure.join(',')})`;
  const tenantId = db.prepare("SELECT id FROM audit_tenants WHERE name = 'fabrikam'").pluck().get() as number;
  const actorIn = 'actor_id IN (SELECT id FROM audit_actors WHERE instr(folded, ?) > 0)';
  return [
    {
      name: 'services=sharepoint',
      query: 'services=sharepoint',
      where: 'service = ?',
      params: ['sharepoint'],
    },
    { name: 'actor contains "kowalski"', query: 'actor=kowalski', where: actorIn, params: ['kowalski'] },
    {
      name: 'actor contains "emma.smith40"',
      query: 'actor=emma.smith40',
      where: actorIn,
      params: ['emma.smith40'],
    },
    {
      name: 'operation contains "ExchangeOperation7"',
      query: 'operation=ExchangeOperation7',
      where: 'operation_id IN (SELECT id FROM audit_operations WHERE instr(folded, ?) > 0)',
      params: ['exchangeoperation7'],
    },
    { name: 'result=failure', query: 'result=failure', where: fail, params: [] },
    {
      name: 'include_tags=incident',
      query: 'include_tags=incident',
      where: "seq IN (SELECT seq FROM audit_event_tags WHERE tag = 'incident')",
      params: [],
    },
    {
      name: 'services=exchange & result=failure & actor contains "meier"',
      query: 'services=exchange&result=failure&actor=meier',
      where: `service = ? AND ${fail} AND ${actorIn}`,
      params: ['exchange', 'meier'],
    },
    {
      name: 'tenant=fabrikam',
      query: tenantQuery('fabrikam'),
      where: 'tenant_id = ?',
      params: [tenantId],
    },
  ];
}

async function searchCase(
  app: Awaited<ReturnType<typeof pluginApp>>['app'],
  db: Database,
  c: Case,
): Promise<BenchResult[]> {
  const first = db.prepare(
    `SELECT * FROM audit_events WHERE ${c.where} ORDER BY ts DESC, seq DESC LIMIT ${PAGE + 1}`,
  );
  const after = db.prepare(
    `SELECT * FROM audit_events WHERE ${c.where} AND (ts < ? OR (ts = ? AND seq < ?)) ORDER BY ts DESC, seq DESC LIMIT ${PAGE + 1}`,
  );
  const rawFirst = timeSync(() => first.all(...c.params), REPS);
  // Where page DEEP starts: after the last row of page DEEP - 1 — the route's own (followed by
  // its cursors), or by hand when the route cannot ask (the hand-written deep walk is slow).
  type At = { ts: number; seq: number };
  let from: At | undefined;
  let ours:
    | { first: Awaited<ReturnType<typeof timeRoute>>; deep?: Awaited<ReturnType<typeof timeRoute>> }
    | undefined;
  if (c.query !== undefined) {
    const path = `/api/events?${c.query}&limit=${PAGE}`;
    const firstPage = await timeRoute(app, path, REPS);
    let body = firstPage.body;
    for (let p = 1; p < DEEP - 1 && body.next_cursor; p++) {
      body = (await (await app.request(`${path}&cursor=${body.next_cursor}`)).json()) as typeof body;
    }
    const last = body.data[body.data.length - 1];
    if (body.next_cursor && last) {
      from = db.prepare('SELECT ts, seq FROM audit_events WHERE seq = ?').get(Number(last.id)) as At;
      ours = { first: firstPage, deep: await timeRoute(app, `${path}&cursor=${body.next_cursor}`, REPS) };
    } else ours = { first: firstPage };
  } else {
    let rows = first.all(...c.params) as At[];
    for (let p = 1; p < DEEP - 1 && rows.length > PAGE; p++) {
      const last = rows[PAGE - 1]!;
      rows = after.all(...c.params, last.ts, last.ts, last.seq) as At[];
    }
    if (rows.length > PAGE) from = rows[PAGE - 1];
  }
  const at = from;
  const rawDeep = at ? timeSync(() => after.all(...c.params, at.ts, at.ts, at.seq), REPS) : undefined;
  const row = (
    page: string,
    raw: { p50: number; p95: number },
    ours?: { p50: number; p95: number },
  ): BenchResult => ({
    name: `${SIZE} search: ${page}, ${c.name}`,
    baseline: { label: 'hand-written keyset SQL', value: raw.p50, unit: 'ms p50' },
    ours: ours
      ? { label: 'GET /api/events (in-process)', value: ours.p50, unit: 'ms p50' }
      : {
          label: 'not measured: the route has no such filter yet (tenantQuery hook)',
          value: Number.NaN,
          unit: 'ms p50',
        },
    ratio: ours ? ours.p50 / raw.p50 : Number.NaN,
    target: 'p50 ≤ 10 ms',
    pass: ours ? ours.p50 <= 10 : true,
    notes: `p95 ${ours ? fmt(ours.p95) : '–'} ms (hand-written p95 ${fmt(raw.p95)} ms)`,
  });
  const out = [row('first page', rawFirst, ours?.first)];
  if (rawDeep) out.push(row(`page ${DEEP} via cursor`, rawDeep, ours?.deep));
  process.stderr.write(`  measured ${c.name}\n`);
  return out;
}

async function timelines(
  app: Awaited<ReturnType<typeof pluginApp>>['app'],
  db: Database,
): Promise<BenchResult[]> {
  const counts = db
    .prepare('SELECT actor_id, count(*) AS n FROM audit_events GROUP BY actor_id ORDER BY n DESC')
    .all() as Array<{ actor_id: number; n: number }>;
  const name = (id: number) =>
    db.prepare('SELECT name FROM audit_actors WHERE id = ?').pluck().get(id) as string;
  const picks = [
    { label: 'heaviest actor', ...counts[0]! },
    { label: 'median actor', ...counts[counts.length >> 1]! },
  ];
  const out: BenchResult[] = [];
  for (const p of picks) {
    const actor = name(p.actor_id);
    const call = actorTimeline(app, db, actor);
    const raw = timeSync(
      () =>
        db
          .prepare(
            `SELECT * FROM audit_events WHERE actor_id = ? ORDER BY ts DESC, seq DESC LIMIT ${PAGE + 1}`,
          )
          .all(p.actor_id),
      REPS,
    );
    let ours: { p50: number; p95: number } | undefined;
    if (call) {
      const ms: number[] = [];
      for (let i = 0; i < REPS; i++) {
        const t = performance.now();
        await call();
        ms.push(performance.now() - t);
      }
      ours = { p50: median(ms), p95: percentile(ms, 95) };
    }
    out.push({
      name: `${SIZE} timeline: ${p.label} (${p.n.toLocaleString('en')} events)`,
      baseline: { label: "the actor's newest page by hand", value: raw.p50, unit: 'ms p50' },
      ours: ours
        ? { label: 'timeline', value: ours.p50, unit: 'ms p50' }
        : { label: 'not measured: actorTimeline hook not filled', value: Number.NaN, unit: 'ms p50' },
      ratio: ours ? ours.p50 / raw.p50 : Number.NaN,
      target: 'p50 ≤ 50 ms',
      pass: ours ? ours.p50 <= 50 : true,
      notes: `${actor}; p95 ${ours ? fmt(ours.p95) : '–'} ms (by hand p95 ${fmt(raw.p95)} ms)`,
    });
  }
  return out;
}

export async function run(): Promise<BenchResult[]> {
  const file = cacheFile();
  if (existsSync(file)) process.stderr.write(`  reusing ${file}\n`);
  else build(file);
  // Bytes on disk per event: the database file (checkpointed, no WAL), not VACUUMed, over N.
  const bytes = statSync(file).size;
  process.stderr.write(
    `  ${N.toLocaleString('en')} events, ${(bytes / 1e9).toFixed(2)} GB on disk: ${(bytes / N).toFixed(0)} bytes per event\n`,
  );
  const db = openDatabase(file);
  let actors: Actor[] = [];
  try {
    const { app, actors: started } = await pluginApp(db, { RETENTION_DAYS: '36500' });
    actors = started;
    const results: BenchResult[] = [];
    for (const c of cases(db)) results.push(...(await searchCase(app, db, c)));
    results.push(...(await timelines(app, db)));
    results[0]!.notes = `${results[0]!.notes}; ${(bytes / N).toFixed(0)} bytes on disk per event (${(bytes / 1e9).toFixed(2)} GB file for ${N.toLocaleString('en')} events, with the upstream records)`;
    return results;
  } finally {
    for (const a of actors) await a.stop().catch(() => undefined);
    closeDatabase(db);
  }
}
