/**
 * The plugin's view of the hub's SQLite connection: migrated on first use, with one set of
 * repositories (and their prepared statements and caches) per connection. The store actor may
 * reopen the connection after a restart; the next call then migrates and prepares again.
 */
import { migrateComponent } from '../../../src/store/component-migrations.js';
import type { Database } from '../../../src/store/database.js';
import { Annotations } from './annotations.js';
import { AuditTrail } from './audit-trail.js';
import { Dictionaries } from './dictionaries.js';
import { EventQuery } from './event-query.js';
import { AuditEventWriter } from './event-writer.js';
import { PluginState } from './plugin-state.js';
import { AUDIT_COMPONENT, AUDIT_MIGRATIONS } from './schema.js';
import { SourceStates } from './source-state.js';

export interface AuditRepositories {
  db: Database;
  dictionaries: Dictionaries;
  writer: AuditEventWriter;
  query: EventQuery;
  annotations: Annotations;
  sources: SourceStates;
  trail: AuditTrail;
  state: PluginState;
}

export function openAuditRepositories(db: Database): AuditRepositories {
  migrateComponent(db, AUDIT_COMPONENT, AUDIT_MIGRATIONS);
  const dictionaries = new Dictionaries(db);
  return {
    db,
    dictionaries,
    writer: new AuditEventWriter(db, dictionaries),
    query: new EventQuery(db, dictionaries),
    annotations: new Annotations(db),
    sources: new SourceStates(db),
    trail: new AuditTrail(db),
    state: new PluginState(db),
  };
}

export class AuditStore {
  private bound: AuditRepositories | undefined;
  private readonly storedListeners = new Set<Parameters<AuditEventWriter['onStored']>[0]>();

  constructor(private readonly connection: () => Database) {}

  /** The repositories of the current connection (migrating it the first time it is seen). */
  repos(): AuditRepositories {
    const db = this.connection();
    if (this.bound?.db !== db) {
      this.bound = openAuditRepositories(db);
      for (const listener of this.storedListeners) this.bound.writer.onStored(listener);
    }
    return this.bound;
  }

  /** Stored-event listeners that survive a reconnect (for the later alert and SIEM features). */
  onStored(listener: Parameters<AuditEventWriter['onStored']>[0]): () => void {
    this.storedListeners.add(listener);
    const off = this.bound?.writer.onStored(listener);
    return () => {
      this.storedListeners.delete(listener);
      off?.();
    };
  }
}
