/**
 * The hand-written check of `node` bodies (sync/protocol.ts isNodeBody), exactly as strict as
 * nodeBody (zod), which it stands in front of: a `node` body is refused by the fast check exactly
 * when nodeBody refuses it, and the refusal is zod's, word for word.
 */
import { describe, expect, it } from 'vitest';
import { isNodeBody, nodeBody, syncRecordSchema } from '../../../sync/protocol.js';

const T0 = Date.UTC(2026, 2, 10, 8, 0);

describe('node bodies, checked by hand', () => {
  const good = {
    node_num: 0xa,
    node_id: '!0000000a',
    short_name: 'A',
    long_name: 'Ålpha ☂',
    hw_model: null,
    latitude: 52.1,
    longitude: null,
    altitude: -3,
    last_heard: T0,
    battery_level: null,
    snr: 5.5,
    updated_at: T0,
  };
  const cases: [string, Record<string, unknown>][] = [
    ['a key too many', { ...good, extra: 1 }],
    ['a key missing', (({ snr: _, ...rest }) => rest)(good)],
    ['undefined for null', { ...good, hw_model: undefined }],
    ['__proto__ as a key', JSON.parse(`{"__proto__": 1, ${JSON.stringify(good).slice(1)}`)],
    ['a negative node_num', { ...good, node_num: -1 }],
    ['node_num past 32 bits', { ...good, node_num: 2 ** 32 }],
    ['a fractional node_num', { ...good, node_num: 1.5 }],
    ['node_num as a string', { ...good, node_num: '10' }],
    ['a station id', { ...good, node_id: 'roof-1' }],
    ['upper-case hex', { ...good, node_id: '!0000000A' }],
    ['short_name of 65', { ...good, short_name: 'x'.repeat(65) }],
    ['long_name of 129', { ...good, long_name: 'x'.repeat(129) }],
    ['hw_model a number', { ...good, hw_model: 4 }],
    ['latitude infinite', { ...good, latitude: Number.POSITIVE_INFINITY }],
    ['altitude NaN', { ...good, altitude: Number.NaN }],
    ['snr a string', { ...good, snr: '5' }],
    ['last_heard fractional', { ...good, last_heard: T0 + 0.5 }],
    ['last_heard past a Date', { ...good, last_heard: 8.64e15 + 2 }],
    ['updated_at null', { ...good, updated_at: null }],
    ['an array', [] as unknown as Record<string, unknown>],
  ];

  it('takes what nodeBody takes, at its bounds too', () => {
    for (const body of [
      good,
      {
        ...good,
        node_num: 0xffffffff,
        short_name: 'x'.repeat(64),
        long_name: 'x'.repeat(128),
        last_heard: null,
      },
      { ...good, updated_at: -8.64e15, latitude: -0, battery_level: 101 },
    ]) {
      expect(nodeBody.safeParse(body).success).toBe(true);
      expect(isNodeBody(body)).toBe(true);
      expect(syncRecordSchema.parse({ seq: 1, kind: 'node', at: T0, body })).toEqual({
        seq: 1,
        kind: 'node',
        at: T0,
        body,
      });
    }
  });

  it.each(cases)('refuses %s, as nodeBody does and in its words', (_what, body) => {
    const zod = nodeBody.safeParse(body);
    expect(zod.success).toBe(false);
    expect(isNodeBody(body)).toBe(false);
    const parsed = syncRecordSchema.safeParse({ seq: 1, kind: 'node', at: T0, body });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual(
      zod.error!.issues.map((i) => [['body', ...i.path].join('.'), i.message]),
    );
  });

  it('refuses a bad record around a good body as zod does', () => {
    for (const record of [
      { seq: 0, kind: 'node', at: T0, body: good },
      { seq: 1, kind: 'node', at: T0 + 0.5, body: good },
      { seq: 1, kind: 'node', at: T0, body: good, through: 1 },
      { seq: 1, kind: 'node', at: T0, body: good, more: 1 },
      { seq: 1, kind: 'node', at: T0 },
    ]) {
      expect(syncRecordSchema.safeParse(record).success).toBe(false);
    }
  });
});
