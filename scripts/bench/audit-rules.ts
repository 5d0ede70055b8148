/**
 * Alert rules against audit ingest (issue 14 "Performance"): evaluating 50 enabled rules costs
 * ingest at most 20% of its events/s. Both sides run the audit bench's ingest path (100k
 * fetched records → normalise → dictionaries → dedupe insert, batches of 1000) on a fresh
 * SQLite file in the same run; "ours" has the AlertEngine on the writer's stored-events hook,
 * as ALERTS_ENABLED=true wires it, with 50 enabled rules of every kind: exact and substring
 * matches on operation and actor, results, services, after-hours windows (UTC and
 * Europe/Berlin), and threshold rules per actor and overall that count their matches in SQLite.
 */
import { pino } from 'pino';
import { AlertRepository } from '../../plugins/audit/alerts/alert-repository.js';
import { conditionJson, ruleBodySchema } from '../../plugins/audit/alerts/condition.js';
import { AlertEngine } from '../../plugins/audit/alerts/engine.js';
import { compileRule, EventMemo } from '../../plugins/audit/alerts/matcher.js';
import { type NormalizedEvent, normalizeRecord } from '../../plugins/audit/normalize.js';
import { openAuditRepositories } from '../../plugins/audit/store/audit-store.js';
import { closeDatabase, openDatabase } from '../../src/store/database.js';
import { actorName, INGEST_ROWS, LAST, upstreamRecords } from './audit-fixture.js';
import { tempDir } from './lib/readings.js';
import { type BenchResult, compare } from './report.js';

const WORKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri'];

/**
 * 50 rules, ten of each kind, shaped like the ones an administrator writes: each looks at a
 * slice of the events (a service, an operation, failures, a person) and fires rarely. Together
 * they match about a tenth of the events (so threshold rules count thousands of matches) and
 * fire on about 1% (the notes print how many).
 */
export function benchRules(): unknown[] {
  const rules: unknown[] = [];
  const services = ['Exchange', 'SharePoint', 'Teams', 'Entra ID', 'Intune'];
  for (let i = 0; i < 10; i++) {
    const service = services[i % services.length]!;
    rules.push({
      name: `failed operation ${i}`,
      condition: {
        services: service,
        operation: { contains: `operation${i}` },
        result: 'failure',
        threshold: { count: 3, window: '1h', per: 'actor' },
      },
    });
    rules.push({
      name: `watched actor ${i}`,
      severity: 'high',
      condition: {
        actor: { equals: actorName(100 + i * 37), contains: `.${LAST_NAMES[i]}9` },
        result: 'failure',
      },
    });
    rules.push({
      name: `after hours ${i}`,
      condition: {
        operation: { contains: [`operation1${i}`, `operation2${i % 5}`] },
        result: ['failure', 'unknown'],
        time: {
          days: WORKDAYS,
          from: '08:00',
          to: '18:00',
          when: 'outside',
          ...(i % 2 ? { time_zone: 'Europe/Berlin' } : {}),
        },
      },
    });
    rules.push({
      name: `failure burst ${i}`,
      condition: {
        services: service,
        result: 'failure',
        threshold:
          i % 2 ? { count: 200, window: '1d', per: 'overall' } : { count: 5, window: '1h', per: 'actor' },
      },
    });
    rules.push({
      name: `exact operation ${i}`,
      severity: 'low',
      condition: {
        operation: { equals: [`ExchangeOperation${i + 3}`, `Directory operation ${i + 5}`] },
        result: ['failure', 'unknown'],
        threshold: { count: 2, window: '6h', per: 'actor' },
      },
    });
  }
  return rules;
}

/** Last names the fixture's actors carry (its list without müller, then meier again). */
const LAST_NAMES = [...LAST.slice(0, 8), 'silva', 'meier'];

interface Side {
  db: ReturnType<typeof openDatabase>;
  write(events: NormalizedEvent[]): void;
  engine?: AlertEngine;
  ms: number;
}

function openSide(
  dir: ReturnType<typeof tempDir>,
  name: string,
  addRules?: (db: ReturnType<typeof openDatabase>) => AlertEngine,
): Side {
  const db = openDatabase(dir.file(`${name}.db`));
  const repos = openAuditRepositories(db);
  const side: Side = { db, write: (events) => repos.writer.writeNow(events), ms: 0 };
  if (addRules) {
    side.engine = addRules(db);
    repos.writer.onStored(side.engine.onStored);
  }
  return side;
}

/** The 50 rules of benchRules(), written over the rule API's path, and the engine ALERTS_ENABLED wires. */
function withBenchRules(db: ReturnType<typeof openDatabase>): AlertEngine {
  const store = AlertRepository.on(db);
  for (const [i, r] of benchRules().entries()) {
    const body = ruleBodySchema.parse(r);
    store.createRule(body, conditionJson(body.condition), 'bench', i);
  }
  const engine = new AlertEngine({
    store: () => store,
    timeZone: 'UTC',
    webhook: false,
    log: pino({ level: 'silent' }),
  });
  if (engine.rules().length !== 50) throw new Error('expected 50 enabled rules');
  return engine;
}

/**
 * Both sides ingest the same pages into their own database, page by page in turns (the first
 * to go alternates), so a busy machine slows both alike: the ratio stays meaningful when the
 * absolute figures do not.
 */
export function ingestRound(
  records: ReturnType<typeof upstreamRecords>,
  round: number,
  addRules: (db: ReturnType<typeof openDatabase>) => AlertEngine = withBenchRules,
  countMatched: (db: ReturnType<typeof openDatabase>) => number = countMatchedEvents,
) {
  const dir = tempDir('audit-rules');
  const plain = openSide(dir, 'plain');
  const ruled = openSide(dir, 'ruled', addRules);
  try {
    for (let i = 0; i < records.length; i += 1000) {
      const page = records.slice(i, i + 1000);
      const sides = (i / 1000 + round) % 2 ? [ruled, plain] : [plain, ruled];
      for (const side of sides) {
        const t = performance.now();
        const events: NormalizedEvent[] = [];
        for (const { source, record } of page) {
          const out = normalizeRecord(source, record);
          if (out.ok) events.push(out.event);
        }
        side.write(events);
        side.ms += performance.now() - t;
      }
    }
    for (const side of [plain, ruled]) {
      const stored = side.db.prepare('SELECT count(*) FROM audit_events').pluck().get();
      if (stored !== INGEST_ROWS) throw new Error(`ingested ${stored} of ${INGEST_ROWS}`);
    }
    if (ruled.engine!.evaluated !== INGEST_ROWS) throw new Error(`evaluated ${ruled.engine!.evaluated}`);
    return {
      plainMs: plain.ms,
      ruledMs: ruled.ms,
      alerts: ruled.engine!.fired,
      matched: countMatched(ruled.db),
    };
  } finally {
    closeDatabase(plain.db);
    closeDatabase(ruled.db);
    dir.cleanup();
  }
}

/** Re-evaluates the stored events outside the timing to count those that match any rule. */
function countMatchedEvents(db: ReturnType<typeof openDatabase>): number {
  const store = AlertRepository.on(db);
  const rules = store.enabledRules().map((r) => compileRule(r, 'UTC'));
  const rows = db
    .prepare(
      `SELECT e.seq, e.ts, e.service, o.name AS operation, r.normalized AS result, a.name AS actor, e.target
       FROM audit_events e JOIN audit_operations o ON o.id = e.operation_id
       JOIN audit_results r ON r.id = e.result_id JOIN audit_actors a ON a.id = e.actor_id`,
    )
    .all() as Array<{
    seq: number;
    ts: number;
    service: string;
    operation: string;
    result: string;
    actor: string;
    target: string;
  }>;
  let matched = 0;
  for (const r of rows) {
    const e = { ...r, timestamp: r.ts, tags: [] };
    const memo = new EventMemo(e);
    if (rules.some((rule) => rule.matches(e, memo))) matched++;
  }
  return matched;
}

export async function run(): Promise<BenchResult[]> {
  const records = upstreamRecords(INGEST_ROWS, 7);
  const without: number[] = [];
  const withRules: number[] = [];
  let last = { alerts: 0, matched: 0 };
  for (let round = 0; round < 3; round++) {
    const r = ingestRound(records, round);
    without.push(r.plainMs);
    withRules.push(r.ruledMs);
    last = r;
  }
  const rate = (ms: number[]) => INGEST_ROWS / (Math.min(...ms) / 1000);
  return [
    compare(
      'audit ingest with 50 enabled alert rules: 100k records, batches of 1000',
      { label: 'ingest, no rules', value: rate(without), unit: 'events/s' },
      { label: 'ingest + 50 rules evaluated', value: rate(withRules), unit: 'events/s' },
      { atLeast: 0.8, text: '≥ 80% of ingest events/s without rules' },
      `${last.matched} events matched a rule, ${last.alerts} alerts fired (of ${INGEST_ROWS} events); pages taken in turns, best of 3 rounds`,
    ),
  ];
}
