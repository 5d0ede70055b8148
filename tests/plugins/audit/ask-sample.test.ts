/**
 * The curated sample (spec "Ask behaviour" 5): at most LLM_MAX_EVENTS, failures always in,
 * high-value services preferred, stratified by service and operation; and what the prompt shows
 * of it past 50 matches (6).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AskEvent } from '../../../plugins/audit/ask/gather.js';
import { sampleEvents, shownEvents } from '../../../plugins/audit/ask/sample.js';

let seq = 0;
const ev = (
  service: string,
  operation: string,
  result: AskEvent['result'] = 'success',
  ts = ++seq,
): AskEvent => ({
  id: String(++seq),
  seq,
  ts,
  service,
  operation,
  result,
  resultRaw: result,
  actor: 'a@contoso.com',
  target: '',
});

describe('sampleEvents', () => {
  it('takes every failure, then high-value services, then one of each stratum before a second', () => {
    const events = [
      ...Array.from({ length: 50 }, () => ev('exchange', 'MailItemsAccessed')),
      ...Array.from({ length: 5 }, () => ev('directory', 'Add user')),
      ev('device_management', 'Wipe'),
      ev('sharepoint', 'FileDeleted', 'failure'),
      ev('powerbi', 'ViewReport'),
    ];
    const names = (max: number) =>
      sampleEvents(events, max)
        .map((e) => `${e.service}/${e.operation}`)
        .sort();
    // A small budget: the failure, then the high-value services.
    expect(names(3)).toEqual(['device_management/Wipe', 'directory/Add user', 'sharepoint/FileDeleted']);
    // One of each stratum before a second of any; the noisy service last.
    expect(names(5)).toEqual([
      'device_management/Wipe',
      'directory/Add user',
      'exchange/MailItemsAccessed',
      'powerbi/ViewReport',
      'sharepoint/FileDeleted',
    ]);
    expect(names(6)).toContain('directory/Add user');
    expect(names(6).filter((n) => n === 'directory/Add user')).toHaveLength(2);
    const sample = sampleEvents(events, 5);
    // Newest first.
    expect(sample.map((e) => e.ts)).toEqual([...sample.map((e) => e.ts)].sort((a, b) => b - a));
  });

  it('holds for any events and budget: bounded, failures first, no duplicates', () => {
    const arb = fc.array(
      fc.record({
        service: fc.constantFrom('directory', 'device_management', 'exchange', 'teams', 'powerbi'),
        operation: fc.constantFrom('a', 'b', 'c', 'd'),
        result: fc.constantFrom<AskEvent['result']>('success', 'failure', 'unknown'),
      }),
      { maxLength: 300 },
    );
    fc.assert(
      fc.property(arb, fc.integer({ min: 1, max: 250 }), (specs, max) => {
        const events = specs.map((s) => ev(s.service, s.operation, s.result));
        const sample = sampleEvents(events, max);
        expect(sample.length).toBe(Math.min(max, events.length));
        expect(new Set(sample.map((e) => e.seq)).size).toBe(sample.length);
        const failures = events.filter((e) => e.result === 'failure').length;
        expect(sample.filter((e) => e.result === 'failure').length).toBe(Math.min(failures, max));
        // Every stratum gets one before any gets two (when the budget left after failures allows).
        const rest = sample.filter((e) => e.result !== 'failure');
        const strata = new Set(
          events.filter((e) => e.result !== 'failure').map((e) => `${e.service}/${e.operation}`),
        );
        if (rest.length >= strata.size) {
          expect(new Set(rest.map((e) => `${e.service}/${e.operation}`)).size).toBe(strata.size);
        }
      }),
    );
  });
});

describe('shownEvents', () => {
  it('shows all up to 50 matches, else up to 10 failures and the 50 most recent', () => {
    const few = Array.from({ length: 40 }, () => ev('directory', 'x'));
    expect(shownEvents(sampleEvents(few, 200), 40)).toHaveLength(40);
    const many = [
      ...Array.from({ length: 20 }, () => ev('directory', 'x', 'failure', 1)),
      ...Array.from({ length: 150 }, () => ev('directory', 'y')),
    ];
    const shown = shownEvents(sampleEvents(many, 200), 170);
    expect(shown.filter((e) => e.result === 'failure')).toHaveLength(10);
    expect(shown).toHaveLength(60);
  });
});
