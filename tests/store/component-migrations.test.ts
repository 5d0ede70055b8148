import { describe, expect, it } from 'vitest';
import {
  ComponentSchemaTooNewError,
  componentSchemaVersion,
  migrateComponent,
} from '../../src/store/component-migrations.js';
import { openDatabase } from '../../src/store/database.js';
import { schemaVersion } from '../../src/store/migrations.js';

const V1 = { version: 1, name: 'things', up: 'CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT);' };
const V2 = { version: 2, name: 'thing colour', up: 'ALTER TABLE things ADD COLUMN colour TEXT;' };

describe('migrateComponent', () => {
  it('applies pending migrations once, records each, and leaves the core user_version alone', () => {
    const db = openDatabase(':memory:');
    const core = schemaVersion(db);
    expect(componentSchemaVersion(db, 'widgets')).toBe(0);
    expect(migrateComponent(db, 'widgets', [V1], () => 1000)).toBe(1);
    expect(migrateComponent(db, 'widgets', [V1, V2], () => 2000)).toBe(2);
    expect(migrateComponent(db, 'widgets', [V1, V2])).toBe(2);
    expect(db.prepare('SELECT component, version, name, applied_at FROM component_migrations').all()).toEqual(
      [
        { component: 'widgets', version: 1, name: 'things', applied_at: 1000 },
        { component: 'widgets', version: 2, name: 'thing colour', applied_at: 2000 },
      ],
    );
    expect(schemaVersion(db)).toBe(core);
    expect(componentSchemaVersion(db, 'gadgets')).toBe(0);
  });

  it('rolls a failing migration back whole, keeping the version before it', () => {
    const db = openDatabase(':memory:');
    migrateComponent(db, 'widgets', [V1]);
    const broken = { version: 2, name: 'half', up: 'CREATE TABLE half (x); INSERT INTO nowhere VALUES (1);' };
    expect(() => migrateComponent(db, 'widgets', [V1, broken])).toThrow(/nowhere/);
    expect(componentSchemaVersion(db, 'widgets')).toBe(1);
    expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'half'").pluck().get()).toBe(0);
  });

  it('refuses a database written by a newer version of the component', () => {
    const db = openDatabase(':memory:');
    migrateComponent(db, 'widgets', [V1, V2]);
    expect(() => migrateComponent(db, 'widgets', [V1])).toThrow(ComponentSchemaTooNewError);
  });

  it('refuses out-of-order versions and odd component names', () => {
    const db = openDatabase(':memory:');
    expect(() => migrateComponent(db, 'widgets', [V2])).toThrow(/expected 1/);
    expect(() => migrateComponent(db, 'Widgets; DROP', [V1])).toThrow(/component name/);
  });
});
