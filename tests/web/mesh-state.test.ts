/**
 * The dashboard's merge of snapshots and live events: each metric keeps its newest value and
 * last_heard never goes backwards, whatever order the events arrive in.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  EMPTY_MESH,
  hasPosition,
  lastHeard,
  mergeNode,
  mergeReadings,
  snapshot,
  sortedNodes,
} from '../../src/web/src/lib/mesh-state.js';
import type { ReadingJson } from '../../src/web/src/lib/metrics.js';

const at = (minute: number) => new Date(Date.UTC(2026, 10, 21, 10, minute)).toISOString();

const reading = fc.record(
  {
    node_id: fc.constantFrom('!00000001', '!00000002'),
    timestamp: fc.integer({ min: 0, max: 59 }).map(at),
    temperature_c: fc.double({ min: -40, max: 60, noNaN: true }),
    humidity_percent: fc.double({ min: 0, max: 100, noNaN: true }),
  },
  { requiredKeys: ['node_id', 'timestamp'] },
) as fc.Arbitrary<ReadingJson>;

describe('merging readings', () => {
  it('gives each metric its newest value whatever the arrival order (property)', () => {
    fc.assert(
      fc.property(fc.array(reading, { maxLength: 30 }), fc.integer(), (readings, seed) => {
        const shuffled = fc.sample(fc.shuffledSubarray(readings, { minLength: readings.length }), {
          seed,
          numRuns: 1,
        })[0]!;
        const a = mergeReadings(EMPTY_MESH, readings);
        const b = shuffled.reduce((state, r) => mergeReadings(state, [r]), EMPTY_MESH);
        for (const id of ['!00000001', '!00000002']) {
          const mine = readings.filter((r) => r.node_id === id);
          for (const key of ['temperature_c', 'humidity_percent'] as const) {
            const withKey = mine.filter((r) => r[key] !== undefined);
            const newest = Math.max(...withKey.map((r) => Date.parse(r.timestamp)));
            const expected = withKey.filter((r) => Date.parse(r.timestamp) === newest).map((r) => r[key]);
            const got = [a.latest.get(id)?.values[key]?.value, b.latest.get(id)?.values[key]?.value];
            if (withKey.length === 0) expect(got).toEqual([undefined, undefined]);
            else for (const value of got) expect(expected).toContain(value);
          }
        }
      }),
    );
  });

  it('keeps a newer value when an older reading arrives late', () => {
    let state = mergeReadings(EMPTY_MESH, [{ node_id: '!00000001', timestamp: at(30), temperature_c: 20 }]);
    state = mergeReadings(state, [
      { node_id: '!00000001', timestamp: at(10), temperature_c: 5, humidity_percent: 50 },
    ]);
    const latest = state.latest.get('!00000001')!;
    expect(latest.values.temperature_c?.value).toBe(20);
    expect(latest.values.humidity_percent?.value).toBe(50);
    expect(latest.at).toBe(Date.parse(at(30)));
  });
});

describe('merging nodes', () => {
  it('applies the fields an update carries and never moves last_heard back', () => {
    let state = mergeNode(EMPTY_MESH, {
      node_id: '!00000001',
      long_name: 'Ridge',
      latitude: 47.1,
      longitude: 8.5,
      last_heard: at(30),
    });
    state = mergeNode(state, { node_id: '!00000001', battery_level: 80, last_heard: at(10) });
    expect(state.nodes.get('!00000001')).toEqual({
      node_id: '!00000001',
      long_name: 'Ridge',
      latitude: 47.1,
      longitude: 8.5,
      last_heard: at(30),
      battery_level: 80,
    });
  });

  it('keeps what the stream told while a snapshot was in flight', () => {
    let previous = mergeNode(EMPTY_MESH, { node_id: '!00000001', last_heard: at(50) });
    previous = mergeReadings(previous, [{ node_id: '!00000001', timestamp: at(50), temperature_c: 9 }]);
    const state = snapshot(
      [{ node_id: '!00000001', long_name: 'Ridge', last_heard: at(40) }],
      [{ node_id: '!00000001', timestamp: at(40), temperature_c: 7, humidity_percent: 60 }],
      previous,
    );
    expect(state.nodes.get('!00000001')?.last_heard).toBe(at(50));
    expect(state.latest.get('!00000001')?.values.temperature_c?.value).toBe(9);
    expect(state.latest.get('!00000001')?.values.humidity_percent?.value).toBe(60);
    expect(lastHeard(state, '!00000001')).toBe(Date.parse(at(50)));
  });

  it('drops nodes a new snapshot no longer lists, and sorts by name', () => {
    const previous = mergeNode(EMPTY_MESH, { node_id: '!0000000f', long_name: 'Gone' });
    const state = snapshot(
      [
        { node_id: '!00000002', long_name: 'beta' },
        { node_id: '!00000001', long_name: 'Alpha' },
      ],
      [],
      previous,
    );
    expect(sortedNodes(state).map((n) => n.long_name)).toEqual(['Alpha', 'beta']);
  });

  it('treats 0,0 and out-of-range coordinates as no position', () => {
    expect(hasPosition({ node_id: 'a', latitude: 47, longitude: 8 })).toBe(true);
    expect(hasPosition({ node_id: 'a', latitude: 0, longitude: 0 })).toBe(false);
    expect(hasPosition({ node_id: 'a', latitude: 91, longitude: 8 })).toBe(false);
    expect(hasPosition({ node_id: 'a', latitude: 47 })).toBe(false);
  });
});
