/**
 * Issue 29, the actor timeline's counts from the per-day rollup (store/actor-days.ts, audit
 * migration 12): whatever was written (with duplicates), expired by retention or folded as a
 * duplicate, the counts `daily` gives the timeline equal a plain count of the events, for any
 * privacy scope and window; and a database written before the rollup gets it counted.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NormalizedEvent } from '../../../plugins/audit/normalize.js';
import type { SourceName } from '../../../plugins/audit/sources.js';
import { type AuditRepositories, openAuditRepositories } from '../../../plugins/audit/store/audit-store.js';
import type { NormalizedResult } from '../../../plugins/audit/store/dictionaries.js';
import type { DailyCount, PrivacyScope } from '../../../plugins/audit/store/event-query.js';
import {
  deleteExpiredEvents,
  pruneUnusedNames,
  removeDuplicateEvents,
} from '../../../plugins/audit/store/maintenance.js';
import { AUDIT_COMPONENT, AUDIT_MIGRATIONS } from '../../../plugins/audit/store/schema.js';
import { prng } from '../../../scripts/bench/lib/readings.js';
import { migrateComponent } from '../../../src/store/component-migrations.js';
import { closeDatabase, type Database, openDatabase } from '../../../src/store/database.js';

const DAY = 86_400_000;
const BASE = Date.UTC(2026, 0, 1);
const SPAN_DAYS = 20;
const ACTORS = ['Alice@contoso.com', 'alice@contoso.com', 'bob@fabrikam.com', 'carol@contoso.com'];
const SERVICES = ['exchange', 'SharePoint', 'directory', 'MicrosoftTeams'];
const OPERATIONS = ['MailItemsAccessed', 'FileDownloaded', 'Add user', 'Send', 'Update user'];
const TENANTS = ['default', 'contoso', 'fabrikam'];
const SOURCES: SourceName[] = ['exchange', 'sharepoint', 'directory'];
const RESULTS: Array<[string, NormalizedResult]> = [
  ['Succeeded', 'success'],
  ['Failed', 'failure'],
  ['PartiallySucceeded', 'unknown'],
  ['', 'unknown'],
  ['failure', 'failure'],
];

let dir: string;
let db: Database;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'meshhub-actor-days-'));
  db = openDatabase(join(dir, 'hub.sqlite'));
});
afterEach(() => {
  closeDatabase(db);
  rmSync(dir, { recursive: true, force: true });
});

/** The timeline's counts as plain SQL over the events: what `daily` must answer. */
function rawDaily(
  actor: string,
  start: number,
  end: number | undefined,
  scope: PrivacyScope | undefined,
): DailyCount[] {
  const rows = db
    .prepare(
      `SELECT e.ts / 86400000 AS day, e.service AS service, count(*) AS events,
         sum(r.normalized = 'failure') AS failures
       FROM audit_events e
       JOIN audit_actors a ON a.id = e.actor_id
       JOIN audit_operations o ON o.id = e.operation_id
       JOIN audit_results r ON r.id = e.result_id
       JOIN audit_tenants t ON t.id = e.tenant_id
       WHERE lower(a.name) = lower(:actor) AND e.ts >= :start AND (:end IS NULL OR e.ts < :end)
         AND lower(e.service) NOT IN (SELECT lower(value) FROM json_each(:services))
         AND lower(o.name) NOT IN (SELECT lower(value) FROM json_each(:operations))
         AND (:tenants IS NULL OR lower(t.name) IN (SELECT lower(value) FROM json_each(:tenants)))
       GROUP BY 1, 2`,
    )
    .all({
      actor,
      start,
      end: end ?? null,
      services: JSON.stringify(scope?.hiddenServices ?? []),
      operations: JSON.stringify(scope?.hiddenOperations ?? []),
      tenants: scope?.tenants ? JSON.stringify(scope.tenants) : null,
    }) as DailyCount[];
  return rows.sort((a, b) => a.day - b.day || a.service.localeCompare(b.service));
}

/** The rollup as stored, and as a recount of the events would have it. */
const rollup = () =>
  db.prepare('SELECT * FROM audit_actor_days ORDER BY actor_id, day, tenant_id, service, operation_id').all();
const recount = () =>
  db
    .prepare(
      `SELECT actor_id, ts / 86400000 AS day, tenant_id, service, operation_id, count(*) AS events,
         sum(result_id IN (SELECT id FROM audit_results WHERE normalized = 'failure')) AS failures
       FROM audit_events GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5`,
    )
    .all();

function randomEvents(
  repos: AuditRepositories,
  rand: () => number,
  count: number,
  prefix: string,
): NormalizedEvent[] {
  const pick = <T>(values: readonly T[]) => values[Math.floor(rand() * values.length)]!;
  const written: Array<{ tenant: string; source: SourceName; key: string }> = [];
  const events = Array.from({ length: count }, (_, i): NormalizedEvent => {
    const day = Math.floor(rand() * SPAN_DAYS);
    // Some on a day's first and last millisecond, where a day boundary is easy to get wrong.
    const edge = rand();
    const ts = BASE + day * DAY + (edge < 0.1 ? 0 : edge < 0.2 ? DAY - 1 : Math.floor(rand() * DAY));
    // A duplicate of an earlier record (same tenant, source and key) with other fields: not counted.
    const again = written.length && rand() < 0.2 ? pick(written) : undefined;
    const id = again ?? { tenant: pick(TENANTS), source: pick(SOURCES), key: `${prefix}${i}` };
    written.push(id);
    const [resultRaw, result] = pick(RESULTS);
    return {
      tenant: id.tenant,
      source: id.source,
      sourceKey: id.key,
      timestamp: ts,
      service: pick(SERVICES),
      operation: pick(OPERATIONS),
      resultRaw,
      result,
      actor: pick(ACTORS),
      target: 'x',
      raw: '{}',
    };
  });
  const outcome = repos.writer.writeNow(events);
  expect(outcome.duplicates).toBeGreaterThan(0);
  return events;
}

/**
 * Copies under a padded key, as an import or an older version may have written them: most fold
 * into their twin (the maintenance deletes them), some have none and are only re-keyed.
 */
function nonCanonicalCopies(repos: AuditRepositories, rand: () => number, events: NormalizedEvent[]): void {
  const copies = events
    .filter(() => rand() < 0.05)
    .map((e) => ({ ...e, sourceKey: ` ${e.sourceKey}${rand() < 0.7 ? ' ' : '-alone '}` }));
  expect(repos.writer.writeNow(copies).stored).toBeGreaterThan(0);
}

describe('the timeline counts from the per-day rollup', () => {
  it('equal a plain count of the events after duplicates, retention and folding, for any scope and window', async () => {
    let counted = 0;
    for (const seed of [1, 2, 3]) {
      const repos = openAuditRepositories(db);
      db.exec('DELETE FROM audit_events; DELETE FROM audit_actor_days'); // a fresh store per seed
      const rand = prng(seed);
      const pick = <T>(values: readonly T[]) => values[Math.floor(rand() * values.length)]!;
      const some = <T>(values: readonly T[]) => values.filter(() => rand() < 0.3);

      nonCanonicalCopies(repos, rand, randomEvents(repos, rand, 1_500, `s${seed}-a`));
      expect(rollup()).toEqual(recount());
      await deleteExpiredEvents(db, BASE + Math.floor(rand() * 6 * DAY), { chunk: 97 });
      const folded = await removeDuplicateEvents(db, 50);
      expect(folded.removed).toBeGreaterThan(0);
      pruneUnusedNames(db, repos.dictionaries);
      randomEvents(repos, rand, 800, `s${seed}-b`);
      await deleteExpiredEvents(db, BASE + Math.floor((6 + rand() * 4) * DAY) + 1, { chunk: 33 });
      expect(rollup()).toEqual(recount());

      for (let q = 0; q < 60; q++) {
        const name = pick([...ACTORS, 'ALICE@CONTOSO.COM', 'nobody@contoso.com']);
        const start = BASE + Math.floor(rand() * (SPAN_DAYS + 2) - 1) * DAY;
        const end = rand() < 0.5 ? undefined : start + Math.ceil(rand() * 10) * DAY;
        const scope: PrivacyScope | undefined =
          rand() < 0.25
            ? undefined
            : {
                hiddenServices: some(SERVICES).map((s) => (rand() < 0.5 ? s.toUpperCase() : s)),
                hiddenOperations: some(OPERATIONS),
                ...(rand() < 0.5 ? { tenants: some(TENANTS) } : {}),
              };
        const filters = { actorExact: name, start, ...(end === undefined ? {} : { end }) };
        const expected = rawDaily(name, start, end, scope);
        expect(repos.query.daily(filters, scope), JSON.stringify({ seed, filters, scope })).toEqual(expected);
        if (expected.some((d) => d.failures > 0)) counted++;
      }
    }
    // Most windows count something, failures included (the comparison is not of empty lists).
    expect(counted).toBeGreaterThan(90);
  });

  it('are read from the rollup, not from the events', () => {
    const repos = openAuditRepositories(db);
    randomEvents(repos, prng(4), 200, 'r');
    const filters = { actorExact: 'bob@fabrikam.com', start: BASE };
    const before = repos.query.daily(filters, undefined);
    expect(before.length).toBeGreaterThan(0);
    db.exec('UPDATE audit_actor_days SET events = events + 1000');
    expect(repos.query.daily(filters, undefined).map((d) => d.events)).toEqual(
      before.map((d) => d.events + 1000 * groupsOf(d)),
    );
    // Any other filter counts the events themselves.
    expect(repos.query.daily({ ...filters, actor: 'bob' }, undefined)).toEqual(before);
  });
});

/** How many rollup rows (tenants and operations) one day and service of bob's sums. */
function groupsOf(d: DailyCount): number {
  return db
    .prepare(
      "SELECT count(*) FROM audit_actor_days WHERE actor_id = (SELECT id FROM audit_actors WHERE name = 'bob@fabrikam.com') AND day = ? AND service = ?",
    )
    .pluck()
    .get(d.day, d.service) as number;
}

it('migration 12 counts the events a version-11 database holds, and counts on from there', () => {
  migrateComponent(
    db,
    AUDIT_COMPONENT,
    AUDIT_MIGRATIONS.filter((m) => m.version <= 11),
  );
  db.exec(`
    INSERT INTO audit_actors (id, name, folded) VALUES (1, 'Dana@contoso.com', 'dana@contoso.com'), (2, 'eve@contoso.com', 'eve@contoso.com');
    INSERT INTO audit_operations (id, name, folded) VALUES (1, 'Send', 'send'), (2, 'FileDeleted', 'filedeleted');
    INSERT INTO audit_results (id, raw, normalized, folded) VALUES (1, 'Succeeded', 'success', 'succeeded'), (2, 'Failed', 'failure', 'failed');
    INSERT INTO audit_tenants (id, name, folded) VALUES (2, 'contoso', 'contoso');`);
  const event = db.prepare(
    'INSERT INTO audit_events (source, source_key, ts, service, operation_id, result_id, actor_id, tenant_id, target, ingested_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0)',
  );
  const day = BASE / DAY;
  event.run('exchange', 'k1', BASE, 'exchange', 1, 1, 1, 1, 'm');
  event.run('exchange', 'k2', BASE + DAY - 1, 'exchange', 1, 2, 1, 2, 'm');
  event.run('sharepoint', 'k3', BASE + DAY, 'sharepoint', 2, 2, 1, 1, 'f');
  event.run('exchange', 'k4', BASE + DAY, 'exchange', 1, 1, 2, 1, 'm');

  migrateComponent(db, AUDIT_COMPONENT, AUDIT_MIGRATIONS);

  const repos = openAuditRepositories(db);
  const dana = { actorExact: 'dana@contoso.com', start: BASE };
  expect(repos.query.daily(dana, undefined)).toEqual([
    { day, service: 'exchange', events: 2, failures: 1 },
    { day: day + 1, service: 'sharepoint', events: 1, failures: 1 },
  ]);
  expect(
    repos.query.daily(dana, { hiddenServices: [], hiddenOperations: ['FileDeleted'], tenants: ['default'] }),
  ).toEqual([{ day, service: 'exchange', events: 1, failures: 0 }]);
  // After the migration the writer's events count too.
  repos.writer.writeNow([
    {
      tenant: 'default',
      source: 'sharepoint',
      sourceKey: 'k5',
      timestamp: BASE + DAY + 5,
      service: 'sharepoint',
      operation: 'FileDeleted',
      resultRaw: 'Succeeded',
      result: 'success',
      actor: 'Dana@contoso.com',
      target: 'f',
      raw: '{}',
    },
  ]);
  expect(repos.query.daily({ ...dana, end: BASE + 2 * DAY }, undefined)).toEqual([
    { day, service: 'exchange', events: 2, failures: 1 },
    { day: day + 1, service: 'sharepoint', events: 2, failures: 1 },
  ]);
  expect(rollup()).toEqual(recount());
});
