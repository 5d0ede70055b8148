/**
 * The notifications' tables (their own component migrations, src/store/component-migrations.ts):
 * rules, firings (bounded by NOTIFY_HISTORY_MAX, oldest first out) and browsers' push subscriptions.
 */

import { type ComponentMigration, migrateComponent } from '../store/component-migrations.js';
import type { Database } from '../store/database.js';
import type { RuleSpec } from './schemas.js';

export type Rule = RuleSpec & { id: number };

export const NOTIFICATIONS_COMPONENT = 'notifications';

export const NOTIFICATION_MIGRATIONS: readonly ComponentMigration[] = [
  {
    version: 1,
    name: 'rules, firings, push subscriptions',
    up: `
      CREATE TABLE notification_rules (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        spec TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE TABLE notification_firings (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        rule_id INTEGER,
        kind TEXT NOT NULL,
        node_id TEXT NOT NULL,
        subject TEXT NOT NULL,
        at INTEGER NOT NULL,
        message TEXT NOT NULL,
        quiet INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX notification_firings_rule ON notification_firings (rule_id, subject, at);
      CREATE TABLE push_subscriptions (
        endpoint TEXT PRIMARY KEY,
        principal TEXT NOT NULL,
        admin INTEGER NOT NULL,
        p256dh TEXT NOT NULL,
        auth TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX push_subscriptions_principal ON push_subscriptions (principal);
    `,
  },
];

export interface FiringRow {
  id: number;
  ruleId: number | null;
  kind: string;
  nodeId: string;
  subject: string;
  at: number;
  message: string;
  quiet: boolean;
}

export interface PushSubscriptionRow {
  endpoint: string;
  principal: string;
  admin: boolean;
  p256dh: string;
  auth: string;
}

/** Past this many rules a create is refused (422). */
export const MAX_RULES = 500;

interface RawFiring {
  id: number;
  rule_id: number | null;
  kind: string;
  node_id: string;
  subject: string;
  at: number;
  message: string;
  quiet: number;
}

const firing = (r: RawFiring): FiringRow => ({
  id: r.id,
  ruleId: r.rule_id,
  kind: r.kind,
  nodeId: r.node_id,
  subject: r.subject,
  at: r.at,
  message: r.message,
  quiet: r.quiet === 1,
});

export class NotificationStore {
  constructor(
    private readonly db: Database,
    private readonly historyMax: number,
  ) {
    migrateComponent(db, NOTIFICATIONS_COMPONENT, NOTIFICATION_MIGRATIONS);
  }

  rules(): Rule[] {
    return (
      this.db.prepare('SELECT id, spec FROM notification_rules ORDER BY id').all() as Array<{
        id: number;
        spec: string;
      }>
    ).map((r) => ({ id: r.id, ...(JSON.parse(r.spec) as RuleSpec) }));
  }

  rule(id: number): Rule | undefined {
    const r = this.db.prepare('SELECT id, spec FROM notification_rules WHERE id = ?').get(id) as
      | { id: number; spec: string }
      | undefined;
    return r ? { id: r.id, ...(JSON.parse(r.spec) as RuleSpec) } : undefined;
  }

  ruleCount(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM notification_rules').get() as { n: number }).n;
  }

  createRule(spec: RuleSpec, now: number): Rule {
    const { lastInsertRowid } = this.db
      .prepare('INSERT INTO notification_rules (spec, created_at, updated_at) VALUES (?, ?, ?)')
      .run(JSON.stringify(spec), now, now);
    return { id: Number(lastInsertRowid), ...spec };
  }

  updateRule(id: number, spec: RuleSpec, now: number): Rule {
    this.db
      .prepare('UPDATE notification_rules SET spec = ?, updated_at = ? WHERE id = ?')
      .run(JSON.stringify(spec), now, id);
    return { id, ...spec };
  }

  deleteRule(id: number): boolean {
    return this.db.prepare('DELETE FROM notification_rules WHERE id = ?').run(id).changes > 0;
  }

  /** Stores a firing; past NOTIFY_HISTORY_MAX the oldest go. */
  addFiring(f: Omit<FiringRow, 'id'>): FiringRow {
    const { lastInsertRowid } = this.db
      .prepare(
        'INSERT INTO notification_firings (rule_id, kind, node_id, subject, at, message, quiet) VALUES (?, ?, ?, ?, ?, ?, ?)',
      )
      .run(f.ruleId, f.kind, f.nodeId, f.subject, f.at, f.message, f.quiet ? 1 : 0);
    const id = Number(lastInsertRowid);
    if (id > this.historyMax)
      this.db.prepare('DELETE FROM notification_firings WHERE id <= ?').run(id - this.historyMax);
    return { id, ...f };
  }

  /** Newest first, before `beforeId` when given. */
  firings(limit: number, beforeId?: number): FiringRow[] {
    const rows = (
      beforeId === undefined
        ? this.db.prepare('SELECT * FROM notification_firings ORDER BY id DESC LIMIT ?').all(limit)
        : this.db
            .prepare('SELECT * FROM notification_firings WHERE id < ? ORDER BY id DESC LIMIT ?')
            .all(beforeId, limit)
    ) as RawFiring[];
    return rows.map(firing);
  }

  /** When each (rule, subject) last fired: the repeat limit holds across a restart. */
  lastFired(): Array<{ ruleId: number; subject: string; at: number }> {
    return this.db
      .prepare(
        'SELECT rule_id AS ruleId, subject, max(at) AS at FROM notification_firings WHERE rule_id IS NOT NULL GROUP BY rule_id, subject',
      )
      .all() as Array<{ ruleId: number; subject: string; at: number }>;
  }

  saveSubscription(s: PushSubscriptionRow, now: number): void {
    this.db
      .prepare(
        `INSERT INTO push_subscriptions (endpoint, principal, admin, p256dh, auth, created_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (endpoint) DO UPDATE SET principal = excluded.principal, admin = excluded.admin,
           p256dh = excluded.p256dh, auth = excluded.auth`,
      )
      .run(s.endpoint, s.principal, s.admin ? 1 : 0, s.p256dh, s.auth, now);
  }

  /** Deletes the subscription when it is `principal`'s. */
  deleteSubscription(endpoint: string, principal: string): boolean {
    return (
      this.db
        .prepare('DELETE FROM push_subscriptions WHERE endpoint = ? AND principal = ?')
        .run(endpoint, principal).changes > 0
    );
  }

  dropSubscription(endpoint: string): void {
    this.db.prepare('DELETE FROM push_subscriptions WHERE endpoint = ?').run(endpoint);
  }

  subscriptionCount(principal: string): number {
    return (
      this.db.prepare('SELECT count(*) AS n FROM push_subscriptions WHERE principal = ?').get(principal) as {
        n: number;
      }
    ).n;
  }

  /** The admins' subscriptions (rule firings), or one principal's own (their texts). */
  subscriptions(to: { admins: true } | { principal: string }): PushSubscriptionRow[] {
    const rows = (
      'admins' in to
        ? this.db.prepare('SELECT * FROM push_subscriptions WHERE admin = 1').all()
        : this.db.prepare('SELECT * FROM push_subscriptions WHERE principal = ?').all(to.principal)
    ) as Array<{ endpoint: string; principal: string; admin: number; p256dh: string; auth: string }>;
    return rows.map((r) => ({ ...r, admin: r.admin === 1 }));
  }
}
