/**
 * The rule form's promise (issue 15 "a form that cannot produce an invalid condition"), checked
 * against the hub's own contract: every draft the form would send — any mix of the choices its
 * controls offer and of typed values, as long as the form reports no problem — is a body the
 * hub's `ruleBodySchema` accepts, and a stored rule comes back into the form unchanged.
 */
import { describe, expect, it } from 'vitest';
import { conditionJson, ruleBodySchema } from '../../plugins/audit/alerts/condition.js';
import { prng } from '../../scripts/bench/lib/readings.js';
import {
  DAYS,
  type Day,
  draftOf,
  draftProblems,
  emptyDraft,
  RESULTS,
  type RuleDraft,
  ruleBody,
  SEVERITIES,
  WINDOW_UNITS,
  type WindowUnit,
} from '../../src/web/src/audit/rule-draft.js';

const pick = <T>(rand: () => number, items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
const some = <T>(rand: () => number, items: readonly T[]): T[] => items.filter(() => rand() < 0.4);
const TYPED = ['', ' ', '0', '1', '7', '100000', '100001', '10080', '-3', '2.5', 'abc', '604800'];
const TIMES = ['', '00:00', '08:00', '18:00', '23:59'];

function randomDraft(rand: () => number): RuleDraft {
  return {
    ...emptyDraft(),
    name: pick(rand, ['', '  ', 'Failed role assignment', 'x'.repeat(120), 'Ünïcode ✓']),
    description: pick(rand, ['', 'After hours', ' '.repeat(3)]),
    severity: pick(rand, SEVERITIES),
    enabled: rand() < 0.5,
    services: some(rand, ['directory', 'exchange', 'sharepoint', 'device_management', 'teams']),
    operation: {
      mode: pick(rand, ['contains', 'equals'] as const),
      values: some(rand, ['role', 'Wipe', 'x'.repeat(256)]),
    },
    actor: { mode: pick(rand, ['contains', 'equals'] as const), values: some(rand, ['mallory', 'a@b.c']) },
    results: some(rand, RESULTS),
    timeOn: rand() < 0.5,
    days: some(rand, DAYS) as Day[],
    from: pick(rand, TIMES),
    to: pick(rand, TIMES),
    when: pick(rand, ['inside', 'outside'] as const),
    timeZone: pick(rand, ['', 'UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata']),
    thresholdOn: rand() < 0.5,
    count: pick(rand, TYPED),
    windowValue: pick(rand, TYPED),
    windowUnit: pick(rand, Object.keys(WINDOW_UNITS) as WindowUnit[]),
    per: pick(rand, ['actor', 'overall'] as const),
  };
}

describe('the rule form', () => {
  it('sends only bodies the hub accepts', () => {
    const rand = prng(42);
    let sendable = 0;
    for (let i = 0; i < 5_000; i++) {
      const draft = randomDraft(rand);
      if (Object.keys(draftProblems(draft)).length) continue;
      sendable++;
      const parsed = ruleBodySchema.safeParse(ruleBody(draft));
      expect(parsed.success, JSON.stringify({ body: ruleBody(draft), issues: parsed.error?.issues })).toBe(
        true,
      );
    }
    expect(sendable).toBeGreaterThan(500);
  });

  it('says what is wrong, by the hub’s field names', () => {
    const base = { ...emptyDraft(), name: 'A rule' };
    expect(draftProblems({ ...base, name: '  ' })).toEqual({ name: 'Give the rule a name.' });
    expect(draftProblems({ ...base, timeOn: true, from: '09:00', to: '09:00' })).toEqual({
      'condition.time.to': 'Must differ from “From”.',
    });
    expect(draftProblems({ ...base, timeOn: true, days: [], from: '', to: '' })).toEqual({
      'condition.time': 'Choose at least one day, or a from or until time.',
    });
    expect(
      draftProblems({ ...base, thresholdOn: true, count: '0', windowValue: '8', windowUnit: 'd' }),
    ).toEqual({
      'condition.threshold.count': 'A whole number from 1 to 100,000.',
      'condition.threshold.window': 'A whole number; the window is 1 second to 7 days.',
    });
    expect(draftProblems({ ...base, thresholdOn: true, windowValue: '7', windowUnit: 'd' })).toEqual({});
  });

  it('brings a stored rule back into the form unchanged, tags included', () => {
    const body = ruleBodySchema.parse({
      name: 'After hours',
      severity: 'high',
      condition: {
        services: ['Entra ID'],
        operation: { contains: ['role'] },
        result: 'failure',
        tags: { none_of: ['expected'] },
        time: {
          days: ['mon', 'fri'],
          from: '08:00',
          to: '18:00',
          when: 'outside',
          time_zone: 'Europe/Berlin',
        },
        threshold: { count: 5, window: '10m', per: 'overall' },
      },
    });
    const stored = {
      id: '1',
      name: body.name,
      description: body.description,
      severity: body.severity,
      enabled: body.enabled,
      condition: conditionJson(body.condition),
      created_at: '2026-11-24T10:00:00.000Z',
      updated_at: '2026-11-24T10:00:00.000Z',
      created_by: null,
      updated_by: null,
    };
    const again = ruleBodySchema.parse(ruleBody(draftOf(stored)));
    expect(conditionJson(again.condition)).toEqual(stored.condition);
    expect(again).toMatchObject({ name: 'After hours', severity: 'high', enabled: true });
  });
});
