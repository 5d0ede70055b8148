/**
 * How an ask counts (issue 13 "Performance"): the total by a capped count(*) and the counts by
 * service, operation, result and actor over a bounded newest slice, both in SQL, never reading
 * the matches into JavaScript. They must mean what reading every match meant:
 * - the store's count and tally agree with the rows the search itself returns (the page path,
 *   with the same filters and privacy scope), for random filters, caps and slice sizes;
 * - a gated event is never counted, shown or named, through the broad question's service
 *   streams or an explicit services list;
 * - the prompt and the fallback say when the counts cover only the newest matches;
 * - a cached answer is never served to a caller whose privacy view differs.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AskService } from '../../../plugins/audit/ask/ask-service.js';
import { fallbackAnswer } from '../../../plugins/audit/ask/fallback.js';
import { summarizeEvents } from '../../../plugins/audit/ask/gather.js';
import { askMessages } from '../../../plugins/audit/ask/prompt.js';
import type { CacheStore } from '../../../plugins/audit/cache/store.js';
import { ANONYMOUS } from '../../../plugins/audit/http/context.js';
import { PrivacyPolicy } from '../../../plugins/audit/http/privacy.js';
import type { LanguageModel } from '../../../plugins/audit/llm/client.js';
import { type AuditRepositories, AuditStore } from '../../../plugins/audit/store/audit-store.js';
import type { EventFilters, EventRow, PrivacyScope } from '../../../plugins/audit/store/event-query.js';
import { closeDatabase, type Database, openDatabase } from '../../../src/store/database.js';
import { type FakeChatCompletions, startFakeChatCompletions } from '../../fakes/llm/fake-chat-completions.js';
import { type AuditTestApp, auditApp, jsonInit, llmEnv, type SeedEvent, seed, silent } from './helpers.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 0, 1);
const SERVICES: Array<Pick<SeedEvent, 'source' | 'service'>> = [
  { source: 'directory' },
  { service: 'Exchange' },
  { service: 'SharePoint' },
  { service: 'OneDrive' },
  { service: 'MicrosoftTeams' },
];
const OPERATIONS = ['Add user', 'Reset password', 'MailItemsAccessed', 'FileShared', 'MemberAdded'];
const ACTORS = ['alice@contoso.com', 'bob@contoso.com', 'carol@fabrikam.com', 'DESKTOP-77'];
const TARGETS = ['mailbox', 'LAPTOP-9 report', '10.0.0.7', 'doc.docx'];

describe('the store counts what the search returns', () => {
  let db: Database;
  let repos: AuditRepositories;
  const serviceKeys = ['directory', 'exchange', 'sharepoint', 'onedrive', 'teams'];

  beforeAll(() => {
    db = openDatabase(':memory:');
    repos = new AuditStore(() => db).repos();
    // 400 events over 400 hours; several share a timestamp, so (ts, seq) order matters.
    seed(
      repos,
      Array.from({ length: 400 }, (_, i) => ({
        ...SERVICES[(i * 7) % SERVICES.length]!,
        at: T0 + Math.floor(i / 3) * HOUR,
        operation: OPERATIONS[(i * 3) % OPERATIONS.length]!,
        actor: ACTORS[(i * 5) % ACTORS.length]!,
        target: TARGETS[(i * 11) % TARGETS.length]!,
        result: i % 9 === 0 ? 'failure' : 'success',
        id: `e-${i}`,
      })),
    );
  });
  afterAll(() => closeDatabase(db));

  /** Every match through the search's own page path, and the terms as the JavaScript walk checked them. */
  const reference = (filters: EventFilters, privacy: PrivacyScope | undefined, terms: string[]) => {
    const rows: EventRow[] = [];
    for (const chunk of repos.query.chunks(filters, privacy, 50)) rows.push(...chunk);
    return rows.filter((row) => {
      if (!terms.length) return true;
      const actor = repos.dictionaries.actors.nameOf(row.actor_id).toLowerCase();
      const target = row.target.toLowerCase();
      return terms.some((t) => actor.includes(t) || target.includes(t));
    });
  };

  const scenario = fc.record({
    services: fc.option(fc.subarray(serviceKeys, { minLength: 1 }), { nil: undefined }),
    hiddenServices: fc.subarray(serviceKeys),
    hiddenOperations: fc.subarray(OPERATIONS),
    result: fc.option(fc.constantFrom('failure', 'success'), { nil: undefined }),
    window: fc.option(fc.tuple(fc.integer({ min: 0, max: 140 }), fc.integer({ min: 1, max: 140 })), {
      nil: undefined,
    }),
    terms: fc.subarray(['desktop-77', 'laptop-9', '10.0.0.7', 'fabrikam', 'nothing-like-it']),
    cap: fc.integer({ min: 1, max: 450 }),
    max: fc.integer({ min: 1, max: 450 }),
  });

  it('counts exactly up to the cap, and tallies exactly the newest slice it names', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const filters: EventFilters = {
          ...(s.services ? { services: s.services } : {}),
          ...(s.result ? { result: s.result } : {}),
          ...(s.window
            ? { start: T0 + s.window[0] * HOUR, end: T0 + (s.window[0] + s.window[1]) * HOUR }
            : {}),
        };
        const privacy =
          s.hiddenServices.length || s.hiddenOperations.length
            ? { hiddenServices: s.hiddenServices, hiddenOperations: s.hiddenOperations }
            : undefined;
        const rows = reference(filters, privacy, s.terms);
        const withTerms = s.terms.length ? { ...filters, actorOrTarget: s.terms } : filters;

        const { count, capped } = repos.query.count(withTerms, privacy, s.cap);
        expect(count).toBe(Math.min(rows.length, s.cap));
        expect(capped).toBe(rows.length > s.cap);

        const tally = repos.query.tally(withTerms, privacy, s.max);
        if (!rows.length) {
          expect(tally.events).toBe(0);
          return;
        }
        // The slice: every match at or after `since`, newest first in the reference.
        const since = tally.since!;
        const slice = rows.filter((r) => r.ts > since.ts || (r.ts === since.ts && r.seq >= since.seq));
        expect(tally.events).toBe(slice.length);
        expect(slice.length).toBeLessThanOrEqual(Math.max(s.max, 1) + serviceKeys.length);
        expect(slice.length).toBeGreaterThanOrEqual(
          Math.min(rows.length, Math.ceil(s.max / serviceKeys.length)),
        );
        // It is the newest: nothing older than `since` is in it, nothing newer left out.
        expect(rows.slice(0, slice.length)).toEqual(slice);
        const tallyOf = (pick: (r: EventRow) => string | number) => {
          const m = new Map<string | number, number>();
          for (const r of slice) m.set(pick(r), (m.get(pick(r)) ?? 0) + 1);
          return m;
        };
        expect(tally.service).toEqual(tallyOf((r) => r.service));
        expect(tally.operation).toEqual(tallyOf((r) => r.operation_id));
        expect(tally.result).toEqual(tallyOf((r) => r.result_id));
        expect(tally.actor).toEqual(tallyOf((r) => r.actor_id));
        // Nothing the scope hides is ever counted.
        for (const service of tally.service.keys()) expect(s.hiddenServices).not.toContain(service);
        for (const id of tally.operation.keys()) {
          expect(s.hiddenOperations).not.toContain(repos.dictionaries.operations.nameOf(id));
        }
      }),
      { numRuns: 150 },
    );
  });

  it('says whether the counts cover every match', () => {
    const all = summarizeEvents(repos, { services: ['directory'] }, undefined, []);
    expect(all.countsCover).toMatchObject({ events: all.total, allMatched: true });
    expect(all.counts.service).toEqual([['directory', all.total]]);
  });
});

describe('asks never count a gated event', () => {
  let fake: FakeChatCompletions;
  let t: AuditTestApp;
  const now = Date.now();

  beforeAll(async () => {
    fake = await startFakeChatCompletions();
    t = await auditApp({
      ...llmEnv(fake.baseUrl),
      RATE_LIMIT_ASK: '100000/1m',
      PRIVACY_SERVICES: 'teams',
      PRIVACY_SENSITIVE_OPERATIONS: 'Reset password',
    });
    seed(t.repos, [
      // 90 directory events, 30 of them the sensitive operation, by a person who does nothing else.
      ...Array.from({ length: 90 }, (_, i) => ({
        source: 'directory' as const,
        at: now - (i + 1) * 60_000,
        operation: i % 3 === 0 ? 'Reset password' : 'Add user',
        actor: i % 3 === 0 ? 'secret-resetter@contoso.com' : 'admin@contoso.com',
        result: i % 3 === 0 ? 'failure' : 'success',
      })),
      // Gated chat events by a person who does nothing else.
      ...Array.from({ length: 30 }, (_, i) => ({
        at: now - (i + 1) * 60_000,
        service: 'MicrosoftTeams',
        operation: 'MemberAdded',
        actor: 'chatty@contoso.com',
      })),
    ]);
  });
  afterAll(async () => {
    await t.close();
    await fake.stop();
  });

  const countsIn = (content: string) => JSON.parse(/<counts>(.*)<\/counts>/.exec(content)![1]!);

  it.each([
    ['a broad question (counted per visible service)', { question: 'What happened in the last day?' }],
    [
      'an explicit services list naming a gated one',
      { question: 'everything in the last day', services: ['teams', 'directory'] },
    ],
  ])('%s', async (_name, body) => {
    fake.reset();
    const { status, body: answer } = await t.json('/api/ask', jsonInit('POST', body));
    expect(status).toBe(200);
    expect(answer.total_matched).toBe(60);
    expect(answer.query_info.counts_cover).toEqual({
      events: 60,
      all_matched: true,
      since: expect.any(String),
    });
    const content = fake.requests[0]!.body.messages[1].content as string;
    expect(content).toContain('of 60 matched events.');
    const counts = countsIn(content);
    expect(counts.by_service).toEqual({ directory: 60 });
    expect(counts.by_operation).toEqual({ 'Add user': 60 });
    expect(counts.by_actor).toEqual({ 'admin@contoso.com': 60 });
    expect(counts.by_result).toEqual({ success: 60 });
    for (const word of ['Reset password', 'secret-resetter', 'chatty', 'MemberAdded']) {
      expect(content).not.toContain(word);
      expect(JSON.stringify(answer)).not.toContain(word);
    }
  });
});

describe('counts over the newest slice only', () => {
  const info = {
    time_range: { start: null, end: null, source: 'none' as const },
    filters: [],
    overridden: [],
    entities: { actors: [], devices: [], ips: [], operations: [] },
    matched_on_actor_or_target: [],
    excluded_services: null,
    notes: [],
  };
  const counts = { service: [['directory', 10_000]], operation: [], result: [], actor: [] } as never;
  const since = Date.UTC(2026, 2, 1, 12);

  it('are named as such in the prompt', () => {
    const [, user] = askMessages({
      question: 'q',
      info,
      total: 50_000,
      totalCapped: true,
      shown: [],
      counts,
      countsCover: { events: 10_000, allMatched: false, since },
    });
    expect(user!.content).toContain(
      'Counts over the newest 10000 of more than 50000 matched events (those since 2026-03-01T12:00:00.000Z) (top 15 of each):',
    );
    const [, whole] = askMessages({
      question: 'q',
      info,
      total: 120,
      totalCapped: false,
      shown: [],
      counts,
      countsCover: { events: 120, allMatched: true, since },
    });
    expect(whole!.content).toContain('Counts over all 120 matched events (top 15 of each):');
  });

  it('are named as such in the fallback list', () => {
    const { answer } = fallbackAnswer({
      info,
      total: 31_072,
      totalCapped: false,
      counts,
      countsCover: { events: 10_000, allMatched: false, since },
      sample: [],
      reason: 'off',
    });
    expect(answer).toContain(
      '- The counts below cover the newest 10000 of 31072 matched events (those since 2026-03-01T12:00:00.000Z).',
    );
  });
});

describe('the ask cache', () => {
  it('keys answers by what the caller’s view hides, not only by whether it hides something', async () => {
    const db = openDatabase(':memory:');
    const store = new AuditStore(() => db);
    seed(store.repos(), [{ source: 'directory', at: Date.now() - HOUR, operation: 'Add user' }]);
    const values = new Map<string, string>();
    const cache: CacheStore = {
      get: async (key) => values.get(key),
      set: async (key, value) => void values.set(key, value),
    };
    let calls = 0;
    const llm: LanguageModel = {
      configured: true,
      model: 'm',
      complete: async () => ({ text: `answer ${++calls}`, model: 'm' }),
      close: async () => {},
    };
    const service = (services: string[]) =>
      new AskService({
        store,
        privacy: new PrivacyPolicy({ sensitiveOperations: [], services, roles: ['Audit.Privacy'] }),
        llm,
        cache,
        maxEvents: 200,
        log: silent,
      });
    try {
      const before = await service(['teams']).ask({ question: 'what happened?', filters: {} }, ANONYMOUS);
      const again = await service(['teams']).ask({ question: 'what happened?', filters: {} }, ANONYMOUS);
      expect([before.cached, again.cached]).toEqual([false, true]);
      // PRIVACY_SERVICES changed (a restart with other settings): a new answer, not the old one.
      const changed = await service(['teams', 'exchange']).ask(
        { question: 'what happened?', filters: {} },
        ANONYMOUS,
      );
      expect(changed).toMatchObject({ cached: false, answer: 'answer 2' });
    } finally {
      closeDatabase(db);
    }
  });
});
