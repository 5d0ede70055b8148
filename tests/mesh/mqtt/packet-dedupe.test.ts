/** The (from, packet id) memory shared by the radio path and the MQTT path. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PacketDedupe } from '../../../src/mesh/packet-dedupe.js';

describe('PacketDedupe', () => {
  it('says first sighting once per (from, id) within the window', () => {
    const d = new PacketDedupe({ windowMs: 1_000 });
    expect(d.firstSighting(1, 100, 0)).toBe(true);
    expect(d.firstSighting(1, 100, 10)).toBe(false);
    expect(d.firstSighting(2, 100, 10)).toBe(true);
    expect(d.firstSighting(1, 101, 10)).toBe(true);
    expect(d.duplicates).toBe(1);
  });

  it('forgets a key after the window: packet ids come round again', () => {
    const d = new PacketDedupe({ windowMs: 1_000 });
    expect(d.firstSighting(1, 100, 0)).toBe(true);
    expect(d.firstSighting(1, 100, 1_000)).toBe(true);
    expect(d.firstSighting(1, 100, 1_500)).toBe(false);
  });

  it('treats packet id 0 (unset) as always new', () => {
    const d = new PacketDedupe();
    expect(d.firstSighting(1, 0, 0)).toBe(true);
    expect(d.firstSighting(1, 0, 0)).toBe(true);
  });

  it('never holds more than its capacity, whatever arrives', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 1, max: 50 })), {
          maxLength: 300,
        }),
        (packets) => {
          const d = new PacketDedupe({ capacity: 16, windowMs: 60_000 });
          for (const [i, [from, id]] of packets.entries()) d.firstSighting(from, id, i);
          expect(d.size).toBeLessThanOrEqual(16);
        },
      ),
    );
  });

  it('matches a plain Set while nothing expires or is evicted', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 1, max: 5 }))),
        (packets) => {
          const d = new PacketDedupe({ capacity: 1_000, windowMs: 60_000 });
          const seen = new Set<string>();
          for (const [from, id] of packets) {
            const key = `${from}:${id}`;
            expect(d.firstSighting(from, id, 0)).toBe(!seen.has(key));
            seen.add(key);
          }
        },
      ),
    );
  });
});
