/**
 * Phrases the web UI builds from parts (the audit search and rule summaries, durations) go
 * through the catalogue: English reads as it always has, German reads as German.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { durationWords as hubDurationWords } from '../../src/domain/duration.js';
import { describeSearch, parseSearch } from '../../src/web/src/audit/audit-filters.js';
import { conditionWords, dayName } from '../../src/web/src/audit/rule-draft.js';
import { setLanguage } from '../../src/web/src/i18n/index.js';
import { durationWords } from '../../src/web/src/lib/format.js';

const SEARCH = '?actor=carol&operation=Delete&result=failure&include_tags=a,b&exclude_tags=c,d&range=24h';

const CONDITION = {
  operation: { equals: ['Add', 'Remove'], contains: ['role'] },
  result: ['failure', 'unknown'],
  tags: { all_of: ['x', 'y'], none_of: ['z'] },
  time: { days: ['mon', 'tue'], from: '08:00', to: '18:00', when: 'outside', time_zone: 'UTC' },
  threshold: { count: 5, window: '10m', per: 'overall' },
};

const SAMPLES_MS = [
  0,
  45_000,
  59_400,
  90_000,
  25 * 60_000,
  3_600_000,
  90 * 60_000,
  3 * 3_600_000,
  35 * 3_600_000,
  86_400_000 * 2,
  86_400_000 * 9,
];

afterEach(() => setLanguage('en'));

// The full condition, one alert per actor an hour, and every matching event, in each language
// (German day names as the catalogue has them, read once the language is set).
it.each([
  {
    language: 'en' as const,
    full: (): string =>
      'operation is “Add” or “Remove” and contains “role”; result failure or unknown; tagged x and y; not tagged z; outside Mon, Tue 08:00–18:00 (UTC); 5 events in 10m overall',
    perActor: 'Any event; 1 event in 1h per actor',
    every: 'Any event; every matching event (at most one alert an hour per actor)',
  },
  {
    language: 'de' as const,
    full: (): string =>
      `Vorgang ist „Add“ oder „Remove“ und enthält „role“; Ergebnis failure oder unknown; mit Tag x und y; ohne Tag z; außerhalb von ${dayName('mon')}, ${dayName('tue')} 08:00–18:00 (UTC); 5 Ereignisse in 10m insgesamt`,
    perActor: 'Jedes Ereignis; 1 Ereignis in 1h pro Akteur',
    every: 'Jedes Ereignis; jedes passende Ereignis (höchstens ein Alarm pro Stunde und Akteur)',
  },
])('words a rule condition in $language', ({ language, full, perActor, every }) => {
  setLanguage(language);
  expect(conditionWords(CONDITION, (s) => s)).toBe(full());
  expect(conditionWords({ threshold: { count: 1, window: '1h', per: 'actor' } }, (s) => s)).toBe(perActor);
  expect(conditionWords({}, (s) => s)).toBe(every);
});

describe('phrases in English', () => {
  it('describes a search as before', () => {
    setLanguage('en');
    expect(describeSearch(parseSearch(SEARCH))).toBe(
      'actor "carol" · operation "Delete" · result "failure" · tagged a and b · not tagged c or d · last 24 h',
    );
  });

  it('words durations exactly as the hub does', () => {
    setLanguage('en');
    expect(SAMPLES_MS.map(durationWords)).toEqual(SAMPLES_MS.map(hubDurationWords));
    expect([45_000, 25 * 60_000, 3 * 3_600_000, 2 * 86_400_000, 86_400_000].map(durationWords)).toEqual([
      '45 s',
      '25 min',
      '3 h',
      '2 days',
      '24 h',
    ]);
  });
});

describe('phrases in German', () => {
  it('describes a search in German', () => {
    setLanguage('de');
    const words = describeSearch(parseSearch(SEARCH));
    expect(words).toContain('Akteur „carol“');
    expect(words).toContain('Vorgang „Delete“');
    expect(words).toContain('Ergebnis „failure“');
    expect(words).toContain('mit Tag a und b');
    expect(words).toContain('ohne Tag c oder d');
    expect(words).not.toMatch(/\b(actor|operation|result|tagged|and|or)\b/);
  });

  it('words durations in German', () => {
    setLanguage('de');
    expect([45_000, 25 * 60_000, 3 * 3_600_000, 86_400_000 * 1.6, 2 * 86_400_000].map(durationWords)).toEqual(
      ['45 s', '25 Min.', '3 Std.', '2 Tage', '2 Tage'],
    );
    expect(durationWords(36 * 3_600_000)).toBe('2 Tage');
  });
});
