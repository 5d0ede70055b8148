/**
 * The question parser and the merge with explicit filters (spec "Ask behaviour" 1–4), with no
 * LLM and no store: a table of questions with the filters and exclusions each must produce, and
 * properties over generated input (fast-check).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BROAD_EXCLUSION_REASON, EmptyWindowError, mergeScope } from '../../../plugins/audit/ask/merge.js';
import { parseQuestion } from '../../../plugins/audit/ask/question-parser.js';

/** Wednesday 12 November 2025, 15:30 UTC. */
const NOW = Date.UTC(2025, 10, 12, 15, 30);
const DAY = 86_400_000;
const KNOWN_OPERATIONS = [
  'Add user',
  'Delete user',
  'Add member to role',
  'Reset user password',
  'MailItemsAccessed',
  'New-InboxRule',
  'FileDownloaded',
  'Wipe ManagedDevice',
  'MemberAdded',
  'Send',
];
const NOISY = ['exchange', 'sharepoint', 'onedrive', 'teams'];

interface Row {
  q: string;
  start?: string | null;
  end?: string | null;
  services?: string[] | null;
  actor?: string | null;
  operation?: string | null;
  result?: string | null;
  excluded?: boolean;
  terms?: string[];
}

const iso = (ms: number) => new Date(ms).toISOString();
const midnight = Date.UTC(2025, 10, 12);

const TABLE: Row[] = [
  {
    q: 'What happened yesterday?',
    start: iso(midnight - DAY),
    end: iso(midnight),
    excluded: true,
    services: null,
  },
  { q: 'anything odd today', start: iso(midnight), end: iso(midnight + DAY), excluded: true },
  { q: 'Summarise the last 7 days', start: iso(NOW - 7 * DAY), end: iso(NOW + 1), excluded: true },
  { q: 'activity in the past 24 hours', start: iso(NOW - DAY), end: iso(NOW + 1), excluded: true },
  { q: 'what changed over the last two weeks', start: iso(NOW - 14 * DAY), end: iso(NOW + 1) },
  { q: 'events during the last hour', start: iso(NOW - 3_600_000), end: iso(NOW + 1) },
  { q: 'last week in review', start: iso(NOW - 7 * DAY), end: iso(NOW + 1) },
  { q: 'What happened since Monday?', start: iso(midnight - 2 * DAY), end: iso(NOW + 1), excluded: true },
  { q: 'changes since wednesday', start: iso(midnight), end: iso(NOW + 1) },
  { q: 'since Thursday', start: iso(midnight - 6 * DAY), end: iso(NOW + 1) },
  { q: 'what went on in October', start: iso(Date.UTC(2025, 9, 1)), end: iso(Date.UTC(2025, 10, 1)) },
  { q: 'in December', start: iso(Date.UTC(2024, 11, 1)), end: iso(Date.UTC(2025, 0, 1)) },
  { q: 'in march 2025', start: iso(Date.UTC(2025, 2, 1)), end: iso(Date.UTC(2025, 3, 1)) },
  { q: 'What happened on 2025-10-03?', start: '2025-10-03T00:00:00.000Z', end: '2025-10-04T00:00:00.000Z' },
  {
    q: 'between 2025-10-01 and 2025-10-05',
    start: '2025-10-01T00:00:00.000Z',
    end: '2025-10-06T00:00:00.000Z',
  },
  { q: 'from 3 October to 5 October', start: '2025-10-03T00:00:00.000Z', end: '2025-10-06T00:00:00.000Z' },
  { q: 'since 2025-11-01', start: '2025-11-01T00:00:00.000Z', end: iso(NOW + 1) },
  { q: 'before 2025-01-01', start: null, end: '2025-01-01T00:00:00.000Z' },
  { q: 'after 2025-11-10', start: '2025-11-11T00:00:00.000Z', end: null },
  {
    q: 'what happened at 2025-11-10T08:00:00Z',
    start: '2025-11-10T08:00:00.000Z',
    end: '2025-11-10T09:00:00.000Z',
  },
  { q: 'this month', start: '2025-11-01T00:00:00.000Z', end: iso(NOW + 1) },
  { q: 'Which devices were wiped last week?', services: ['device_management'], excluded: false },
  { q: 'Show me device enrolment problems', services: ['device_management'], result: 'failure' },
  { q: 'Were any users added to a role?', services: ['directory'], excluded: false },
  { q: 'group membership changes', services: ['directory'] },
  { q: 'Who reset passwords yesterday?', services: ['directory'] },
  { q: 'any new mailbox forwarding rules', services: ['exchange'], excluded: false },
  { q: 'who read mail of the CEO', services: ['exchange'] },
  { q: 'which files were shared externally', services: ['sharepoint', 'onedrive'] },
  { q: 'changes to sites', services: ['sharepoint', 'onedrive'] },
  { q: 'new teams and chats created', services: ['teams'] },
  { q: 'users who downloaded files', services: ['directory', 'sharepoint', 'onedrive'] },
  {
    q: 'What did alice@contoso.com do yesterday?',
    actor: 'alice@contoso.com',
    excluded: false,
    services: null,
  },
  {
    q: 'failed sign-ins of Bob.Smith@Contoso.com since Monday',
    actor: 'bob.smith@contoso.com',
    result: 'failure',
  },
  { q: 'anything from 10.1.2.3 today', terms: ['10.1.2.3'], excluded: false },
  { q: 'activity from 2001:db8:0:0:0:0:0:1', terms: ['2001:db8:0:0:0:0:0:1'] },
  {
    q: 'What happened to DESKTOP-7QK2M last month',
    terms: ['desktop-7qk2m'],
    services: ['device_management'],
  },
  { q: 'was LAPTOP-XY12 involved', terms: ['laptop-xy12'], services: ['device_management'] },
  { q: 'Who did Reset user password this week', operation: 'Reset user password', services: ['directory'] },
  { q: 'any MailItemsAccessed by admins', operation: 'MailItemsAccessed' },
  { q: 'show New-InboxRule events', operation: 'New-InboxRule', excluded: false },
  { q: 'list FileDownloaded in October', operation: 'FileDownloaded', services: null, excluded: false },
  { q: 'who will send the report', operation: 'Send' },
  { q: 'Summarise recent errors', result: 'failure', excluded: true },
  { q: 'Anything unusual?', excluded: true, start: null, end: null, services: null, result: null },
  { q: 'what are the most common operations', excluded: true, operation: null },
];

describe('the question table', () => {
  it('has at least 40 questions', () => expect(TABLE.length).toBeGreaterThanOrEqual(40));

  it.each(TABLE)('$q', (row) => {
    const parsed = parseQuestion(row.q, { now: NOW, knownOperations: KNOWN_OPERATIONS });
    const scope = mergeScope({}, parsed);
    const f = scope.filters;
    if (row.start !== undefined) expect(f.start === undefined ? null : iso(f.start)).toBe(row.start);
    if (row.end !== undefined) expect(f.end === undefined ? null : iso(f.end)).toBe(row.end);
    if (row.services !== undefined) expect(f.services ?? null).toEqual(row.services);
    if (row.actor !== undefined) expect(f.actor ?? null).toBe(row.actor);
    if (row.operation !== undefined) expect(f.operation ?? null).toBe(row.operation);
    if (row.result !== undefined) expect(f.result ?? null).toBe(row.result);
    if (row.terms !== undefined) expect(scope.terms).toEqual(row.terms);
    if (row.excluded !== undefined) {
      expect(scope.excludedServices).toEqual(row.excluded ? NOISY : []);
      expect(scope.info.excluded_services).toEqual(
        row.excluded ? { services: NOISY, reason: BROAD_EXCLUSION_REASON } : null,
      );
    }
  });
});

describe('explicit filters and the question', () => {
  const parsed = parseQuestion('failed device wipes by alice@contoso.com yesterday', {
    now: NOW,
    knownOperations: KNOWN_OPERATIONS,
  });

  it('takes each field from the request when given, and reports what it replaced', () => {
    const scope = mergeScope({ services: ['directory'], actor: 'bob', start: Date.UTC(2025, 9, 1) }, parsed);
    expect(scope.filters).toMatchObject({
      services: ['directory'],
      actor: 'bob',
      start: Date.UTC(2025, 9, 1),
      end: midnight,
      result: 'failure',
    });
    expect(scope.info.overridden).toEqual([
      { field: 'services', question_value: ['device_management'], request_value: ['directory'] },
      { field: 'actor', question_value: 'alice@contoso.com', request_value: 'bob' },
      { field: 'start', question_value: iso(midnight - DAY), request_value: '2025-10-01T00:00:00.000Z' },
    ]);
    expect(scope.info.time_range).toMatchObject({ source: 'mixed', phrase: 'yesterday' });
    expect(scope.info.filters.find((f) => f.field === 'result')).toEqual({
      field: 'result',
      value: 'failure',
      source: 'question',
      because: 'the question asks about failures',
    });
  });

  it('refuses a merged window that ends before it starts', () => {
    expect(() => mergeScope({ start: Date.UTC(2025, 10, 20) }, parsed)).toThrow(EmptyWindowError);
    const backwards = parseQuestion('between 2025-10-05 and 2025-10-01', { now: NOW });
    expect(() => mergeScope({}, backwards)).toThrow(/ends before it starts/);
  });

  it('an explicit services filter makes a broad question narrow', () => {
    const broad = parseQuestion('anything unusual?', { now: NOW });
    expect(mergeScope({}, broad).excludedServices).toEqual(NOISY);
    expect(mergeScope({ services: ['teams'] }, broad).excludedServices).toEqual([]);
  });
});

describe('properties', () => {
  it('never throws, whatever the question', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.integer({ min: 0, max: 4_102_444_800_000 }), (q, now) => {
        const parsed = parseQuestion(q, { now, knownOperations: KNOWN_OPERATIONS });
        try {
          mergeScope({}, parsed);
        } catch (error) {
          expect(error).toBeInstanceOf(EmptyWindowError);
        }
      }),
    );
  });

  it('"last N days" ends now and spans N days', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 365 }),
        fc.integer({ min: 0, max: 4_102_444_800_000 }),
        (n, now) => {
          const r = parseQuestion(`what happened in the last ${n} days`, { now }).range!;
          expect(r.end).toBe(now + 1);
          expect(r.end! - r.start!).toBe(n * DAY + 1);
        },
      ),
    );
  });

  it('"between A and B" covers both whole days', () => {
    const day = fc.integer({ min: 0, max: 3000 }).map((d) => Date.UTC(2020, 0, 1) + d * DAY);
    fc.assert(
      fc.property(day, day, (a, b) => {
        fc.pre(a <= b);
        const q = `between ${iso(a).slice(0, 10)} and ${iso(b).slice(0, 10)}`;
        const r = parseQuestion(q, { now: NOW }).range!;
        expect([r.start, r.end]).toEqual([a, b + DAY]);
      }),
    );
  });

  it('an explicit filter always wins over the question', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...TABLE.map((r) => r.q)),
        fc.constantFrom('directory', 'exchange', 'teams'),
        fc.string({ minLength: 1, maxLength: 20 }),
        (q, service, actor) => {
          const scope = mergeScope({ services: [service], actor }, parseQuestion(q, { now: NOW }));
          expect(scope.filters.services).toEqual([service]);
          expect(scope.filters.actor).toBe(actor);
          expect(scope.excludedServices).toEqual([]);
        },
      ),
    );
  });

  it('"since <weekday>" starts at that weekday\'s midnight, at most 6 days back', () => {
    const days = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
    fc.assert(
      fc.property(
        fc.constantFrom(...days),
        fc.integer({ min: 7 * DAY, max: 4_102_444_800_000 }),
        (d, now) => {
          const r = parseQuestion(`since ${d}`, { now }).range!;
          expect(r.start! % DAY).toBe(0);
          expect(new Date(r.start!).getUTCDay()).toBe(days.indexOf(d));
          expect(now - r.start!).toBeLessThan(7 * DAY);
          expect(now - r.start!).toBeGreaterThanOrEqual(0);
        },
      ),
    );
  });
});
