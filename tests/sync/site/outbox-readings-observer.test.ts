/**
 * The readings observer of the outbox (outbox-schema.ts `readingsOutboxWriter`) called directly:
 * the stored body is exactly `JSON.stringify({ rows })` of the rows the protocol can carry, in
 * order: an id READING_NODE_ID refuses stays local however often it comes, and the rows
 * around it keep their order.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closeDatabase, type Database, openDatabase } from '../../../src/store/database.js';
import type { StoredReadingRow } from '../../../src/store/reading-observers.js';
import { MAX_READINGS_ROWS } from '../../../sync/protocol.js';
import { migrateSyncTables, READINGS_KIND, readingsOutboxWriter } from '../../../sync/site/outbox-schema.js';

const T0 = Date.UTC(2025, 4, 1);
const AT = T0 + 42;
const DISTINCT = 5_500;

let dir: string;
let db: Database;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'meshhub-outbox-observer-'));
  db = openDatabase(join(dir, 'hub.sqlite'));
  migrateSyncTables(db);
});
afterEach(() => {
  closeDatabase(db);
  rmSync(dir, { recursive: true, force: true });
});

const entries = () =>
  db.prepare('SELECT kind, at, body FROM sync_outbox ORDER BY seq').all() as {
    kind: string;
    at: number;
    body: string;
  }[];

const row = (id: string, i: number): StoredReadingRow => [
  id,
  T0 + i,
  i / 3,
  null,
  100_000 + i,
  null,
  null,
  null,
  null,
  -i,
];

describe('readingsOutboxWriter', () => {
  it('stores exactly JSON.stringify of the rows, values as JavaScript writes them', () => {
    const observe = readingsOutboxWriter(db, () => AT);
    const rows: StoredReadingRow[] = [
      ['!0000000a', T0, -0, 1 / 3, 5e-324, 1e21, 0.1 + 0.2, null, 1.7976931348623157e308, -1e-7],
      ['roof-1', -62_135_596_800_000, null, null, null, null, null, null, null, 12],
    ];
    observe(rows);
    expect(entries()).toEqual([{ kind: READINGS_KIND, at: AT, body: JSON.stringify({ rows }) }]);
    expect(entries()[0]!.body).toBe(
      '{"rows":[["!0000000a",1746057600000,0,0.3333333333333333,5e-324,1e+21,0.30000000000000004,null,1.7976931348623157e+308,-1e-7],' +
        '["roof-1",-62135596800000,null,null,null,null,null,null,null,12]]}',
    );
  });

  it('leaves out every row whose id the protocol cannot carry, however often seen, and keeps the order', () => {
    const observe = readingsOutboxWriter(db, () => AT);
    const bad = ['bad id', 'x'.repeat(65), '', 'quote"d'];
    // Valid ids seen first and again after the bad ones; each bad one twice.
    const rows: StoredReadingRow[] = [];
    for (let i = 0; i < 40; i++) {
      rows.push(row(`!${(0x10000000 + (i % 7)).toString(16)}`, i));
      if (i % 10 === 3) rows.push(row(bad[(i / 10) | 0]!, i), row(bad[(i / 10) | 0]!, i + 1000));
    }
    observe(rows);
    observe(rows.slice(0, 5));
    const carried = rows.filter((r) => !bad.includes(r[0]));
    expect(carried).toHaveLength(40);
    expect(entries().map((e) => e.body)).toEqual([
      JSON.stringify({ rows: carried }),
      JSON.stringify({ rows: rows.slice(0, 5).filter((r) => !bad.includes(r[0])) }),
    ]);
  });

  it('stays exact over thousands of distinct ids, split into entries of MAX_READINGS_ROWS rows', () => {
    const observe = readingsOutboxWriter(db, () => AT);
    // Many distinct valid ids, a refused id among them, then the first ones again.
    const ids = Array.from({ length: DISTINCT }, (_, i) => `station-${i}`);
    ids.splice(DISTINCT - 1_000, 0, 'no good');
    ids.push(...ids.slice(0, 10), 'no good');
    const rows = ids.map((id, i) => row(id, i));
    observe(rows);
    const carried = rows.filter((r) => r[0] !== 'no good');
    expect(carried).toHaveLength(DISTINCT + 10);
    const bodies = entries().map((e) => e.body);
    expect(bodies).toHaveLength(Math.ceil(carried.length / MAX_READINGS_ROWS));
    for (let k = 0; k < bodies.length; k++) {
      expect(bodies[k]).toBe(
        JSON.stringify({ rows: carried.slice(k * MAX_READINGS_ROWS, (k + 1) * MAX_READINGS_ROWS) }),
      );
    }
  });

  it('writes nothing when no row can be carried', () => {
    const observe = readingsOutboxWriter(db, () => AT);
    observe([row('bad id', 1), row('also bad', 2)]);
    expect(entries()).toEqual([]);
  });
});
