/**
 * Synthetic audit data for the audit benchmark: upstream records shaped like Graph and
 * Management API ones (for the ingestion figure), and the 1,000,000-event fixture with the same
 * distribution written straight into the tables (for search, bulk tagging and export).
 */
import { type NormalizedEvent, normalizeRecord } from '../../plugins/audit/normalize.js';
import { openAuditRepositories } from '../../plugins/audit/store/audit-store.js';
import type { Database } from '../../src/store/database.js';
import { prng } from './lib/readings.js';

export const EVENTS = 1_000_000;
export const INGEST_ROWS = 100_000;
export const T0 = Date.UTC(2025, 0, 1);
export const SPAN = 90 * 86_400_000;
const SERVICES: Array<[string, number]> = [
  ['Exchange', 0.4],
  ['SharePoint', 0.25],
  ['MicrosoftTeams', 0.1],
  ['directory', 0.15],
  ['device_management', 0.05],
  ['OneDrive', 0.05],
];
const FIRST = [
  'anna',
  'ben',
  'chloe',
  'david',
  'emma',
  'felix',
  'grace',
  'hugo',
  'iris',
  'jonas',
  'karin',
  'liam',
];
export const LAST = [
  'smith',
  'meier',
  'rossi',
  'dubois',
  'novak',
  'kowalski',
  'jensen',
  'garcia',
  'müller',
  'silva',
];
export const USERS = 5_000;

export const actorName = (u: number) =>
  u < 20
    ? `Sync App ${u}`
    : `${FIRST[u % FIRST.length]}.${LAST[Math.floor(u / FIRST.length) % LAST.length]}${u}@contoso.com`;

/** Deterministic upstream records, shaped like Graph and Management API ones. */
export function upstreamRecords(
  count: number,
  seed: number,
): Array<{ source: NormalizedEvent['source']; record: unknown }> {
  const rand = prng(seed);
  const out: Array<{ source: NormalizedEvent['source']; record: unknown }> = new Array(count);
  for (let i = 0; i < count; i++) {
    let r = rand();
    let service = SERVICES[0]![0];
    for (const [name, p] of SERVICES) {
      if (r < p) {
        service = name;
        break;
      }
      r -= p;
    }
    const user = actorName(Math.floor(rand() ** 2 * USERS));
    const op = Math.floor(rand() * rand() * 25);
    const rr = rand();
    const result = rr < 0.93 ? 'Succeeded' : rr < 0.98 ? 'Failed' : undefined;
    const at = T0 + Math.floor((i / count) * SPAN) + Math.floor(rand() * 1000);
    const id = `${seed}-${i.toString(36)}`;
    if (service === 'directory') {
      out[i] = {
        source: 'directory',
        record: {
          id,
          activityDateTime: new Date(at).toISOString(),
          activityDisplayName: `Directory operation ${op}`,
          result: result === 'Failed' ? 'failure' : 'success',
          initiatedBy: { user: { userPrincipalName: user } },
          targetResources: [{ displayName: `group-${op}` }],
        },
      };
    } else if (service === 'device_management') {
      out[i] = {
        source: 'device_management',
        record: {
          id,
          activityDateTime: new Date(at).toISOString(),
          activity: `Intune operation ${op}`,
          activityResult: result === 'Failed' ? 'Failure' : 'Success',
          actor: { auditActorType: 'ItPro', userPrincipalName: user },
          resources: [{ displayName: `policy-${op}` }],
        },
      };
    } else {
      out[i] = {
        source: service === 'Exchange' ? 'exchange' : service === 'MicrosoftTeams' ? 'teams' : 'sharepoint',
        record: {
          CreationTime: new Date(at).toISOString().slice(0, 19),
          Id: id,
          Operation: `${service}Operation${op}`,
          ...(result ? { ResultStatus: result } : {}),
          UserId: user,
          Workload: service,
          ObjectId: `https://contoso.sharepoint.com/sites/s${op}/doc-${i % 1000}.docx`,
        },
      };
    }
  }
  return out;
}

export function normalizeAll(records: ReturnType<typeof upstreamRecords>): NormalizedEvent[] {
  return records.map(({ source, record }) => {
    const out = normalizeRecord(source, record, Number.MAX_SAFE_INTEGER);
    if (!out.ok) throw new Error(out.reason);
    return out.event;
  });
}

const SECONDARY = [
  'audit_events_ts_cover ON audit_events (ts, seq, service, operation_id, result_id, actor_id, tenant_id)',
  'audit_events_service_cover ON audit_events (service, ts, seq, operation_id, result_id, actor_id, tenant_id)',
  'audit_events_actor_cover ON audit_events (actor_id, ts, seq, service, operation_id, result_id, tenant_id)',
  'audit_events_operation_ts ON audit_events (operation_id, ts)',
  'audit_events_result_cover ON audit_events (result_id, ts, seq, service, operation_id, actor_id, tenant_id)',
];

/**
 * The fixture: the same distribution as upstreamRecords, written straight into the tables (ids
 * resolved once per name) with the secondary indexes dropped and rebuilt after.
 */
export function buildFixture(db: Database): number {
  const repos = openAuditRepositories(db);
  const t0 = performance.now();
  for (const index of SECONDARY) db.exec(`DROP INDEX ${index.split(' ')[0]}`);
  const rand = prng(42);
  const d = repos.dictionaries;
  const actors = Array.from({ length: USERS }, (_, u) => d.actors.idOf(actorName(u)));
  const results = [
    d.results.idOf('Succeeded', 'success'),
    d.results.idOf('Failed', 'failure'),
    d.results.idOf('', 'unknown'),
  ];
  const services = SERVICES.map(([name]) => {
    const service = name === 'MicrosoftTeams' ? 'teams' : name.toLowerCase();
    const source = service === 'onedrive' ? 'sharepoint' : service;
    const ops = Array.from({ length: 25 }, (_, o) => d.operations.idOf(`${name}Operation${o}`));
    return { service, source, ops };
  });
  const insert = db.prepare(
    'INSERT INTO audit_events (seq, source, source_key, ts, service, operation_id, result_id, actor_id, target, ingested_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0)',
  );
  const raw = db.prepare('INSERT INTO audit_event_raw (seq, raw) VALUES (?, ?)');
  const batch = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      let r = rand();
      let pick = services[0]!;
      for (let k = 0; k < SERVICES.length; k++) {
        if (r < SERVICES[k]![1]) {
          pick = services[k]!;
          break;
        }
        r -= SERVICES[k]![1];
      }
      const rr = rand();
      const seq = i + 1;
      const ts = T0 + Math.floor((i / EVENTS) * SPAN);
      const actor = actors[Math.floor(rand() ** 2 * USERS)]!;
      insert.run(
        seq,
        pick.source,
        `k${seq}`,
        ts,
        pick.service,
        pick.ops[Math.floor(rand() * rand() * 25)]!,
        results[rr < 0.93 ? 0 : rr < 0.98 ? 1 : 2]!,
        actor,
        `doc-${i % 1000}.docx`,
      );
      raw.run(
        seq,
        `{"Id":"k${seq}","CreationTime":"${new Date(ts).toISOString().slice(0, 19)}","Workload":"${pick.service}"}`,
      );
    }
  });
  for (let i = 0; i < EVENTS; i += 20_000) batch(i, i + 20_000);
  for (const index of SECONDARY) db.exec(`CREATE INDEX ${index}`);
  // 2% of events carry a tag, as reviewed ones would.
  db.exec(`
    UPDATE audit_events SET tags = '["reviewed"]' WHERE seq % 50 = 0;
    INSERT INTO audit_event_tags (tag, ts, seq) SELECT 'reviewed', ts, seq FROM audit_events WHERE seq % 50 = 0;
    ANALYZE;`);
  return performance.now() - t0;
}
