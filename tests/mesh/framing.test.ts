import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PacketTooLargeError } from '../../src/mesh/errors.js';
import {
  encodeFrame,
  type FramerEvent,
  MAX_FRAME_PAYLOAD,
  MAX_LOG_LINE_BYTES,
  StreamFramer,
} from '../../src/mesh/framing.js';

const bytes = (...values: number[]) => Uint8Array.from(values);
const text = (s: string) => new TextEncoder().encode(s);
const concat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};
const frames = (events: FramerEvent[]) =>
  events.filter((e) => e.kind === 'frame').map((e) => Array.from((e as { payload: Uint8Array }).payload));
const logs = (events: FramerEvent[]) =>
  events.filter((e) => e.kind === 'log').map((e) => (e as { line: string }).line);

describe('encodeFrame', () => {
  it('writes 0x94 0xC3, a big-endian length and the payload', () => {
    expect(Array.from(encodeFrame(bytes(1, 2, 3)))).toEqual([0x94, 0xc3, 0x00, 0x03, 1, 2, 3]);
    const big = encodeFrame(new Uint8Array(300).fill(7));
    expect([big[2], big[3]]).toEqual([0x01, 0x2c]);
    expect(big.length).toBe(304);
  });

  it('accepts exactly 512 bytes and rejects 513 with PacketTooLargeError', () => {
    expect(encodeFrame(new Uint8Array(MAX_FRAME_PAYLOAD)).length).toBe(MAX_FRAME_PAYLOAD + 4);
    expect(() => encodeFrame(new Uint8Array(513))).toThrow(PacketTooLargeError);
    expect(() => encodeFrame(new Uint8Array(513))).toThrow(
      'packet of 513 bytes exceeds the 512-byte frame limit',
    );
  });
});

describe('StreamFramer', () => {
  it('round-trips a frame', () => {
    const payload = bytes(0x08, 0x01, 0x94, 0xc3, 0xff, 0x00);
    expect(frames(new StreamFramer().push(encodeFrame(payload)))).toEqual([Array.from(payload)]);
  });

  it('recovers a frame split at every byte position', () => {
    const payload = Uint8Array.from({ length: 40 }, (_, i) => (i * 37) & 0xff);
    const wire = concat(text('boot\n'), encodeFrame(payload), text('after\n'));
    for (let cut = 0; cut <= wire.length; cut++) {
      const framer = new StreamFramer();
      const events = [...framer.push(wire.subarray(0, cut)), ...framer.push(wire.subarray(cut))];
      expect(frames(events), `cut at ${cut}`).toEqual([Array.from(payload)]);
      expect(logs(events), `cut at ${cut}`).toEqual(['boot', 'after']);
    }
  });

  it('recovers a frame fed one byte at a time', () => {
    const framer = new StreamFramer();
    const wire = concat(encodeFrame(bytes(1, 2)), encodeFrame(bytes(3)));
    const events = Array.from(wire).flatMap((b) => framer.push(bytes(b)));
    expect(frames(events)).toEqual([[1, 2], [3]]);
  });

  it('returns several frames from one chunk, in order', () => {
    const wire = concat(
      encodeFrame(bytes(1)),
      encodeFrame(bytes(2, 2)),
      encodeFrame(new Uint8Array(0)),
      encodeFrame(bytes(3)),
    );
    expect(frames(new StreamFramer().push(wire))).toEqual([[1], [2, 2], [], [3]]);
  });

  it('emits the text between frames as log lines: per line, without \\r and ANSI colours', () => {
    const wire = concat(
      text('\u001b[34mDEBUG\u001b[0m | 12:00:01 5 [Router] hello\r\n'),
      encodeFrame(bytes(9)),
      text('INFO  | part one '),
      encodeFrame(bytes(8)),
      text('continues\r\n\r\nWARN | last\n'),
    );
    const events = new StreamFramer().push(wire);
    expect(frames(events)).toEqual([[9], [8]]);
    expect(logs(events)).toEqual([
      'DEBUG | 12:00:01 5 [Router] hello',
      'INFO  | part one continues',
      'WARN | last',
    ]);
  });

  it('treats a lone 0x94 not followed by 0xC3 as text, and a 0x94 right before a frame as garbage', () => {
    // "—" is E2 80 94 in UTF-8.
    const wire = concat(text('a — b\n'), bytes(0x94), encodeFrame(bytes(5)));
    const events = new StreamFramer().push(wire);
    expect(logs(events)).toEqual(['a — b']);
    expect(frames(events)).toEqual([[5]]);
  });

  it('cuts a log line at ~1 KiB and drops the rest of it', () => {
    const events = new StreamFramer().push(concat(text('x'.repeat(5000)), text('\nnext\n')));
    const lines = logs(events);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe(`${'x'.repeat(MAX_LOG_LINE_BYTES)}…`);
    expect(lines[1]).toBe('next');
  });

  it('reports an oversized length as corrupt and resyncs so the next frame is recovered', () => {
    const wire = concat(bytes(0x94, 0xc3, 0x02, 0x01), bytes(1, 2, 3), encodeFrame(bytes(42, 43)));
    const events = new StreamFramer().push(wire);
    expect(events.filter((e) => e.kind === 'corrupt')).toEqual([
      { kind: 'corrupt', reason: 'frame length 513 exceeds 512' },
    ]);
    expect(frames(events)).toEqual([[42, 43]]);
  });

  it('resyncs on a 0x94 hidden in the bogus length bytes', () => {
    // 0x94 0xC3 0x94 0xC3 … : the length 0x94C3 is corrupt, but its bytes start a real frame.
    const wire = concat(bytes(0x94, 0xc3), encodeFrame(bytes(7, 7, 7)));
    const events = new StreamFramer().push(wire);
    expect(events.map((e) => e.kind)).toEqual(['corrupt', 'frame']);
    expect(frames(events)).toEqual([[7, 7, 7]]);
  });

  it('property: garbage without 0x94 interleaved with frames never throws and loses no frame', () => {
    const garbage = fc.uint8Array({ maxLength: 64 }).map((a) => a.map((b) => (b === 0x94 ? 0x20 : b)));
    const payload = fc.uint8Array({ maxLength: MAX_FRAME_PAYLOAD });
    fc.assert(
      fc.property(
        fc.array(fc.tuple(garbage, payload), { maxLength: 12 }),
        garbage,
        fc.array(fc.nat(), { maxLength: 8 }),
        (pairs, tail, cuts) => {
          const wire = concat(...pairs.flatMap(([g, p]) => [g, encodeFrame(p)]), tail);
          const points = [...new Set(cuts.map((c) => c % (wire.length + 1)))].sort((a, b) => a - b);
          const framer = new StreamFramer();
          const events: FramerEvent[] = [];
          let from = 0;
          for (const at of [...points, wire.length]) {
            events.push(...framer.push(wire.subarray(from, at)));
            from = at;
          }
          expect(frames(events)).toEqual(pairs.map(([, p]) => Array.from(p)));
          expect(events.some((e) => e.kind === 'corrupt')).toBe(false);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: arbitrary bytes never throw', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 700 }), { maxLength: 10 }), (chunks) => {
        const framer = new StreamFramer();
        for (const chunk of chunks) framer.push(chunk);
      }),
      { numRuns: 300 },
    );
  });

  it('keeps its partial frame per instance: a fresh framer starts clean', () => {
    const wire = encodeFrame(bytes(1, 2, 3, 4));
    const first = new StreamFramer();
    expect(first.push(wire.subarray(0, 5))).toEqual([]);
    expect(frames(new StreamFramer().push(encodeFrame(bytes(9))))).toEqual([[9]]);
    expect(frames(first.push(wire.subarray(5)))).toEqual([[1, 2, 3, 4]]);
  });
});
