/**
 * The alert engine's candidate index (alerts/candidates.ts) never skips a rule that would match:
 * random Sigma rules (exact, cased and wildcard operations, other fields, lists of maps,
 * keywords, not, `1 of`, `all of`) are installed as start-up installs them, random records of
 * every source are matched by brute force (every rule's own predicate), and each rule that
 * matches must be among the event's candidates. A second test shows the index does narrow:
 * an event meets only the rules of its source that name its operation or pin none, and the
 * alerts are those of brute force.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { AlertRepository } from '../../../plugins/audit/alerts/alert-repository.js';
import { CandidateIndex } from '../../../plugins/audit/alerts/candidates.js';
import { AlertEngine } from '../../../plugins/audit/alerts/engine.js';
import { type AlertableEvent, EventMemo } from '../../../plugins/audit/alerts/matcher.js';
import { compileSigmaRule } from '../../../plugins/audit/sigma/compile.js';
import { installSigmaRules } from '../../../plugins/audit/sigma/install.js';
import { openAuditRepositories } from '../../../plugins/audit/store/audit-store.js';
import { closeDatabase, type Database, openDatabase } from '../../../src/store/database.js';

const cleanup: Array<() => void> = [];
afterEach(() => {
  for (const f of cleanup.splice(0)) f();
});

function database(): Database {
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-candidates-'));
  const db = openDatabase(join(dir, 'hub.db'));
  openAuditRepositories(db);
  cleanup.push(() => {
    closeDatabase(db);
    rmSync(dir, { recursive: true, force: true });
  });
  return db;
}

const OPERATIONS = ['New-InboxRule', 'new-inboxrule', 'Set-InboxRule', 'FileDeleted', 'Add member to role'];
const M365_OPERATION = ['Operation', 'eventName'];
const AZURE_OPERATION = ['properties.message', 'ActivityDisplayName', 'OperationName'];
const MODIFIERS = ['', '', '', '|cased', '|contains', '|startswith', '|endswith', '|all'];

/** A value as a rule writes it: an operation (any case), a piece of one, a wildcard, null. */
const value = fc.oneof(
  fc.constantFrom(...OPERATIONS),
  fc.constantFrom(...OPERATIONS).map((o) => o.toUpperCase()),
  fc.constantFrom('Inbox', 'rule', 'Failed', 'Succeeded', 'failure', 'alice@contoso.com', 'doc-1'),
  fc.constantFrom('New-*', '*Rule', 'File?eleted', 'Set-Inbox\\*Rule'),
  fc.constant(null),
);

const fieldNames = (product: 'm365' | 'azure') =>
  product === 'm365'
    ? [...M365_OPERATION, ...M365_OPERATION, 'ResultStatus', 'UserId', 'ObjectId']
    : [...AZURE_OPERATION, 'Result', 'InitiatedBy.user.userPrincipalName'];

function field(product: 'm365' | 'azure') {
  const names = fieldNames(product);
  return fc.tuple(
    fc.constantFrom(...names),
    fc.constantFrom(...MODIFIERS),
    fc.array(value, { minLength: 1, maxLength: 3 }),
  );
}

/** A selection's body: a map of fields, a list of maps, or keywords. */
function selection(product: 'm365' | 'azure') {
  const exists = fc.option(fc.tuple(fc.constantFrom(...fieldNames(product)), fc.boolean()), {
    nil: undefined,
  });
  const map = fc
    .tuple(fc.array(field(product), { minLength: 1, maxLength: 3 }), exists)
    .map(([fields, has]) => {
      const out: Record<string, unknown> = {};
      if (has) out[`${has[0]}|exists`] = has[1];
      for (const [name, mod, values] of fields) {
        // null takes no modifier; one value is written bare, as rules usually do.
        const key = `${name}${values.includes(null) ? '' : mod}`;
        out[key] = values.length === 1 ? values[0] : values;
      }
      return out;
    });
  return fc.oneof(
    { weight: 4, arbitrary: map },
    { weight: 1, arbitrary: fc.array(map, { minLength: 1, maxLength: 3 }) },
    {
      weight: 1,
      arbitrary: fc.array(fc.constantFrom('inbox', 'FileDel', 'contoso'), { minLength: 1, maxLength: 2 }),
    },
  );
}

/** The engine as a hub without destinations runs it, silent. */
const QUIET = { timeZone: 'UTC', webhook: false, log: pino({ level: 'silent' }) };

let titles = 0;
let seqs = 0;

const CONDITIONS = [
  'sel_a',
  'sel_a and sel_b',
  'sel_a or sel_b',
  'sel_a and not sel_b',
  'not sel_a',
  '1 of sel_*',
  'all of sel_*',
  '(sel_a or sel_b) and sel_c',
  'sel_c and (sel_a or not sel_b)',
];

const rule = fc
  .constantFrom('m365' as const, 'azure' as const)
  .chain((product) =>
    fc.record({
      product: fc.constant(product),
      service: fc.constantFrom(...(product === 'm365' ? ['audit', 'exchange'] : ['auditlogs'])),
      a: selection(product),
      b: selection(product),
      c: selection(product),
      condition: fc.constantFrom(...CONDITIONS),
    }),
  )
  .map((r) => ({
    title: `random ${++titles}`,
    logsource: { product: r.product, service: r.service },
    detection: { sel_a: r.a, sel_b: r.b, sel_c: r.c, condition: r.condition },
  }));

const event = fc
  .record({
    source: fc.constantFrom('exchange', 'sharepoint', 'teams', 'directory'),
    // Mostly one operation; sometimes none, null, or a list (every element is searched).
    operation: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...OPERATIONS) },
      { weight: 2, arbitrary: fc.constantFrom(...OPERATIONS).map((o) => o.toUpperCase()) },
      { weight: 1, arbitrary: fc.constantFrom(undefined, null) },
      { weight: 1, arbitrary: fc.array(fc.constantFrom(...OPERATIONS), { minLength: 1, maxLength: 2 }) },
    ),
    status: fc.option(fc.constantFrom('Succeeded', 'Failed', 'failure'), { nil: undefined }),
    user: fc.constantFrom('alice@contoso.com', 'bob@contoso.com'),
    object: fc.constantFrom('doc-1', 'inbox'),
  })
  .map((r): AlertableEvent => {
    const seq = ++seqs;
    const record =
      r.source === 'directory'
        ? {
            activityDisplayName: r.operation,
            result: r.status,
            initiatedBy: { user: { userPrincipalName: r.user } },
          }
        : { Operation: r.operation, ResultStatus: r.status, UserId: r.user, ObjectId: r.object };
    return {
      seq,
      // A day apart: no alert is held back as a repeat within its window.
      timestamp: Date.UTC(2026, 0, 1) + seq * 86_400_000,
      service: r.source,
      operation: String(r.operation ?? ''),
      result: 'unknown',
      actor: r.user,
      target: r.object,
      tags: [],
      source: r.source,
      raw: JSON.stringify(record),
      // As the normaliser hands it on: the parsed record beside its text (undefined values and all).
      record,
    };
  });

/** Installs the documents that compile (refusals are the loader's business) as start-up does. */
function install(db: Database, docs: unknown[]) {
  const alerts = AlertRepository.on(db);
  const rules = docs.flatMap((doc, i) => {
    try {
      return [{ file: `r${i}.yml`, rule: compileSigmaRule(doc) }];
    } catch {
      return [];
    }
  });
  installSigmaRules(db, alerts, rules, 0);
  return [...alerts.fileRules.values()];
}

/** Up to 12 random rules, installed in a fresh database, against up to 12 random events, `runs` times. */
function forRandomRules(
  runs: { numRuns: number; seed?: number },
  check: (rules: ReturnType<typeof install>, events: AlertableEvent[]) => void,
): void {
  const db = database();
  fc.assert(
    fc.property(
      fc.array(rule, { minLength: 1, maxLength: 12 }),
      fc.array(event, { minLength: 1, maxLength: 12 }),
      (docs, events) => check(install(db, docs), events),
    ),
    runs,
  );
}

describe('the record a rule reads', () => {
  it('gives every rule the same answer from the parsed record as from its stored text', () => {
    forRandomRules({ numRuns: 150 }, (rules, events) => {
      for (const e of events) {
        const { record: _parsed, ...stored } = e;
        for (const r of rules) {
          expect(r.matches(e, new EventMemo(e)), `${r.file} on ${e.raw}`).toBe(
            r.matches(stored, new EventMemo(stored)),
          );
        }
      }
    });
  });
});

describe('the candidate index', () => {
  it('never leaves out a rule that matches the event (random rules and events)', () => {
    let pinned = 0;
    let matched = 0;
    forRandomRules({ numRuns: 300, seed: 29 }, (rules, events) => {
      pinned += rules.filter((r) => r.scope?.pin).length;
      const index = new CandidateIndex(rules.map((r) => r.scope));
      for (const e of events) {
        const memo = new EventMemo(e);
        const candidates = new Set(index.candidates(e, memo));
        rules.forEach((r, at) => {
          if (!r.matches(e, memo)) return;
          matched++;
          expect(candidates.has(at), `rule ${at} matches ${e.raw} but is no candidate`).toBe(true);
        });
      }
    });
    // Not vacuous: rules were pinned, and rules matched.
    expect(pinned).toBeGreaterThan(100);
    expect(matched).toBeGreaterThan(100);
  });

  it('tries an event only on the rules naming its operation or pinning none, and alerts as brute force does', () => {
    const db = database();
    const doc = (title: string, product: string, service: string, detection: Record<string, unknown>) => ({
      title,
      logsource: { product, service },
      detection: { ...detection, condition: 'selection' },
    });
    const rules = install(db, [
      doc('inbox rule', 'm365', 'audit', { selection: { eventName: ['New-InboxRule', 'Set-InboxRule'] } }),
      doc('deleted', 'm365', 'audit', { selection: { Operation: 'FileDeleted' } }),
      doc('any failure', 'm365', 'audit', { selection: { ResultStatus: 'Failed' } }),
      doc('role', 'azure', 'auditlogs', { selection: { 'properties.message': 'Add member to role' } }),
      doc('any directory failure', 'azure', 'auditlogs', { selection: { Result: 'failure' } }),
    ]);
    expect(rules.map((r) => [...(r.scope?.pin?.values ?? [])])).toEqual([
      ['new-inboxrule', 'set-inboxrule'],
      ['filedeleted'],
      [],
      ['add member to role'],
      [],
    ]);
    const index = new CandidateIndex(rules.map((r) => r.scope));
    const sample = fc.sample(event, { numRuns: 50, seed: 7 });
    for (const e of sample) {
      const record = JSON.parse(e.raw!) as { Operation?: unknown; activityDisplayName?: unknown };
      const ops = [record.Operation ?? record.activityDisplayName]
        .flat()
        .filter((o): o is string => typeof o === 'string')
        .map((o) => o.toLowerCase());
      const expected =
        e.source === 'directory'
          ? [...(ops.includes('add member to role') ? [3] : []), 4]
          : [
              ...(ops.some((o) => o.endsWith('-inboxrule')) ? [0] : []),
              ...(ops.includes('filedeleted') ? [1] : []),
              2,
            ];
      expect(index.candidates(e, new EventMemo(e))).toEqual(expected);
    }
    const alerts = AlertRepository.on(db);
    const engine = new AlertEngine({ ...QUIET, store: () => alerts });
    const fired = engine.evaluate(sample).map((a) => [a.rule_id, a.event_seq]);
    const ids = [...alerts.fileRules.keys()];
    const brute = sample.flatMap((e) => {
      const memo = new EventMemo(e);
      return rules.flatMap((r, at) => (r.matches(e, memo) ? [[ids[at], e.seq]] : []));
    });
    expect(fired.length).toBeGreaterThan(0);
    expect(fired).toEqual(brute);
  });
});
