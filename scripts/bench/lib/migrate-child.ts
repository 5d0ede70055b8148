/**
 * The migrate bench's child (scripts/bench/migrate.ts): migrates one database file and exits, so
 * the parent can watch the folder's size while SQLite works. `ours`: the hub's own path
 * (openDatabase: the pre-migration backup, then migration 7 a chunk per transaction). `bare`:
 * the same rows moved by plain SQL in one transaction, with no backup, no chunks and no view.
 */
import { closeDatabase, openDatabase } from '../../../src/store/database.js';
import { MIGRATIONS } from '../../../src/store/migrations.js';
import { encodeSql } from '../../../src/store/reading-codec.js';
import { METRIC_COLUMNS } from '../../../src/store/rollups.js';

const [mode, file] = process.argv.slice(2);
if (!file || (mode !== 'ours' && mode !== 'bare')) throw new Error('usage: migrate-child ours|bare <file>');

if (mode === 'ours') {
  closeDatabase(openDatabase(file));
} else {
  const db = openDatabase(file, { migrate: false });
  const cols = METRIC_COLUMNS.join(', ');
  db.transaction(() => {
    db.exec(`
      CREATE TABLE reading_nodes (node_key INTEGER PRIMARY KEY, node_id TEXT NOT NULL UNIQUE);
      CREATE TABLE reading_rows (node_key INTEGER NOT NULL, ts INTEGER NOT NULL, ${cols}, PRIMARY KEY (node_key, ts)) WITHOUT ROWID;
      INSERT INTO reading_nodes (node_id) SELECT DISTINCT node_id FROM readings;
      INSERT INTO reading_rows (node_key, ts, ${cols})
        SELECT k.node_key, r.ts, ${METRIC_COLUMNS.map((c) => encodeSql(`r.${c}`, c)).join(', ')}
        FROM readings r JOIN reading_nodes k ON k.node_id = r.node_id;
      DROP TABLE readings;
    `);
    db.pragma(`user_version = ${MIGRATIONS.length}`);
  }).immediate();
  closeDatabase(db);
}
