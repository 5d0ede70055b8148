/**
 * Subscriptions: which nodes a subscriber may message — a list of node ids, or every node of the
 * site — with a status and an optional expiry. The CLI grants and revokes them; the billing
 * plugin will create `pending` ones and activate or extend them when an invoice is paid, through
 * this same repository (keep its API stable).
 *
 * A subscription lets its subscriber message a node when it is `active`, not expired, and
 * covers the node. Several subscriptions add up.
 */
import type { Database, Statement } from '../store/database.js';
import { type Atomically, transactionOn } from './atomically.js';
import { NODE_ID_PATTERN } from './validation.js';

export type SubscriptionStatus = 'pending' | 'active' | 'revoked';
export const SUBSCRIPTION_STATUSES: readonly SubscriptionStatus[] = ['pending', 'active', 'revoked'];

export interface Subscription {
  id: number;
  /** The principal id: a local username, or `idp:<sub>`. */
  subscriber: string;
  allNodes: boolean;
  /** Empty when `allNodes`. */
  nodeIds: string[];
  status: SubscriptionStatus;
  /** Milliseconds since the epoch; null: no expiry. */
  expiresAt: number | null;
  /** Who made it: `cli`, `billing`, ... */
  source: string;
  /** The maker's own reference (an invoice id). */
  reference: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface NewSubscription {
  subscriber: string;
  nodes: 'all' | readonly string[];
  status?: SubscriptionStatus;
  expiresAt?: number | null;
  source: string;
  reference?: string | null;
  at?: number;
}

/** What another system (the upstream) says one of its subscriptions is now; see `upsertByReference`. */
export interface SubscriptionState {
  subscriber: string;
  nodes: 'all' | readonly string[];
  status: SubscriptionStatus;
  expiresAt: number | null;
  at?: number;
}

export class InvalidSubscriptionError extends Error {
  override readonly name = 'InvalidSubscriptionError';
}

interface Row {
  id: number;
  subscriber: string;
  all_nodes: number;
  status: SubscriptionStatus;
  expires_at: number | null;
  source: string;
  reference: string | null;
  created_at: number;
  updated_at: number;
}

const COLUMNS = 'id, subscriber, all_nodes, status, expires_at, source, reference, created_at, updated_at';

export class SubscriptionRepository {
  private readonly insert: Statement;
  private readonly insertNode: Statement;
  private readonly byId: Statement<unknown[], Row>;
  private readonly bySubscriber: Statement<unknown[], Row>;
  private readonly all: Statement<unknown[], Row>;
  private readonly nodesOf: Statement<unknown[], { node_id: string }>;
  private readonly allowsStmt: Statement<unknown[], { ok: number }>;
  private readonly lapsedStmt: Statement<unknown[], Row>;
  private readonly setStatusStmt: Statement;
  private readonly setExpiryStmt: Statement;
  private readonly revokeAllStmt: Statement;
  private readonly removeNodeStmt: Statement;
  private readonly revokeEmptyStmt: Statement;
  private readonly byReferenceStmt: Statement<unknown[], Row>;
  private readonly replaceStmt: Statement;
  private readonly deleteNodeStmt: Statement;

  private readonly atomically: Atomically;

  constructor(db: Database) {
    this.atomically = transactionOn(db);
    this.insert = db.prepare(
      `INSERT INTO subscriptions (subscriber, all_nodes, status, expires_at, source, reference, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.insertNode = db.prepare(
      'INSERT OR IGNORE INTO subscription_nodes (subscription_id, node_id) VALUES (?, ?)',
    );
    this.byId = db.prepare(`SELECT ${COLUMNS} FROM subscriptions WHERE id = ?`) as Statement<unknown[], Row>;
    this.bySubscriber = db.prepare(
      `SELECT ${COLUMNS} FROM subscriptions WHERE subscriber = ? ORDER BY id LIMIT 10000`,
    ) as Statement<unknown[], Row>;
    this.all = db.prepare(
      `SELECT ${COLUMNS} FROM subscriptions ORDER BY subscriber, id LIMIT 10000`,
    ) as Statement<unknown[], Row>;
    this.nodesOf = db.prepare(
      'SELECT node_id FROM subscription_nodes WHERE subscription_id = ? ORDER BY node_id',
    ) as Statement<unknown[], { node_id: string }>;
    this.allowsStmt = db.prepare(
      `SELECT 1 AS ok FROM subscriptions s WHERE s.subscriber = ? AND s.status = 'active'
         AND (s.expires_at IS NULL OR s.expires_at > ?)
         AND (s.all_nodes = 1 OR EXISTS (SELECT 1 FROM subscription_nodes n WHERE n.subscription_id = s.id AND n.node_id = ?))
       LIMIT 1`,
    ) as Statement<unknown[], { ok: number }>;
    this.lapsedStmt = db.prepare(
      `SELECT ${COLUMNS} FROM subscriptions s WHERE s.subscriber = ? AND s.status = 'active'
         AND s.expires_at IS NOT NULL AND s.expires_at <= ?
         AND (s.all_nodes = 1 OR EXISTS (SELECT 1 FROM subscription_nodes n WHERE n.subscription_id = s.id AND n.node_id = ?))
       ORDER BY s.expires_at DESC LIMIT 1`,
    ) as Statement<unknown[], Row>;
    this.setStatusStmt = db.prepare('UPDATE subscriptions SET status = ?, updated_at = ? WHERE id = ?');
    this.setExpiryStmt = db.prepare('UPDATE subscriptions SET expires_at = ?, updated_at = ? WHERE id = ?');
    this.revokeAllStmt = db.prepare(
      `UPDATE subscriptions SET status = 'revoked', updated_at = ? WHERE subscriber = ? AND status != 'revoked'`,
    );
    this.removeNodeStmt = db.prepare(
      `DELETE FROM subscription_nodes WHERE node_id = ? AND subscription_id IN
         (SELECT id FROM subscriptions WHERE subscriber = ? AND all_nodes = 0 AND status != 'revoked')`,
    );
    this.revokeEmptyStmt = db.prepare(
      `UPDATE subscriptions SET status = 'revoked', updated_at = ? WHERE subscriber = ? AND all_nodes = 0
         AND status != 'revoked' AND NOT EXISTS (SELECT 1 FROM subscription_nodes n WHERE n.subscription_id = subscriptions.id)`,
    );
    this.byReferenceStmt = db.prepare(
      `SELECT ${COLUMNS} FROM subscriptions WHERE source = ? AND reference = ? ORDER BY id LIMIT 1`,
    ) as Statement<unknown[], Row>;
    this.replaceStmt = db.prepare(
      `UPDATE subscriptions SET subscriber = ?, all_nodes = ?, status = ?, expires_at = ?, updated_at = ?
       WHERE id = ?`,
    );
    this.deleteNodeStmt = db.prepare(
      'DELETE FROM subscription_nodes WHERE subscription_id = ? AND node_id = ?',
    );
  }

  private fromRow(row: Row): Subscription {
    return {
      id: row.id,
      subscriber: row.subscriber,
      allNodes: row.all_nodes === 1,
      nodeIds: row.all_nodes === 1 ? [] : this.nodesOf.all(row.id).map((n) => n.node_id),
      status: row.status,
      expiresAt: row.expires_at,
      source: row.source,
      reference: row.reference,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    };
  }

  /** Checks a subscriber, status and node list; returns the node list without repeats. */
  private checked(
    subscriber: string,
    status: SubscriptionStatus,
    nodesIn: 'all' | readonly string[],
    allowNoNodes: boolean,
  ): string[] {
    if (!subscriber || subscriber.length > 200) {
      throw new InvalidSubscriptionError('a subscription needs a subscriber (1–200 characters)');
    }
    if (!SUBSCRIPTION_STATUSES.includes(status))
      throw new InvalidSubscriptionError(`unknown status "${status}"`);
    const nodes = nodesIn === 'all' ? [] : [...new Set(nodesIn)];
    if (nodesIn !== 'all' && nodes.length === 0 && !allowNoNodes) {
      throw new InvalidSubscriptionError('name at least one node id, or all nodes');
    }
    const bad = nodes.find((n) => !NODE_ID_PATTERN.test(n));
    if (bad !== undefined) throw new InvalidSubscriptionError(`"${bad}" is not a node id like !a1b2c3d4`);
    return nodes;
  }

  create(input: NewSubscription): Subscription {
    const at = input.at ?? Date.now();
    const status = input.status ?? 'active';
    const nodes = this.checked(input.subscriber, status, input.nodes, false);
    const id = this.atomically(() => {
      const result = this.insert.run(
        input.subscriber,
        input.nodes === 'all' ? 1 : 0,
        status,
        input.expiresAt ?? null,
        input.source,
        input.reference ?? null,
        at,
        at,
      );
      const rowId = Number(result.lastInsertRowid);
      for (const node of nodes) this.insertNode.run(rowId, node);
      return rowId;
    });
    return this.get(id)!;
  }

  /**
   * Makes the subscription another system knows as `reference` (its own id) under `source`
   * look as `state` says: created the first time, its subscriber, nodes, status and expiry
   * replaced afterwards, in one transaction. A revoked one may name no nodes (the upstream's
   * way of saying "gone"). `created` tells which happened.
   */
  upsertByReference(
    source: string,
    reference: string,
    state: SubscriptionState,
  ): { subscription: Subscription; created: boolean } {
    const at = state.at ?? Date.now();
    const nodes = this.checked(state.subscriber, state.status, state.nodes, state.status === 'revoked');
    const allNodes = state.nodes === 'all' ? 1 : 0;
    const { id, created } = this.atomically(() => {
      const existing = this.byReferenceStmt.get(source, reference);
      let rowId: number;
      let current = new Set<string>();
      if (existing) {
        rowId = existing.id;
        this.replaceStmt.run(state.subscriber, allNodes, state.status, state.expiresAt, at, rowId);
        // Only what changed is written: every row written here is a record the outbox sends on.
        current = new Set(this.nodesOf.all(rowId).map((n) => n.node_id));
        const wanted = new Set(nodes);
        for (const node of current) if (!wanted.has(node)) this.deleteNodeStmt.run(rowId, node);
      } else {
        const result = this.insert.run(
          state.subscriber,
          allNodes,
          state.status,
          state.expiresAt,
          source,
          reference,
          at,
          at,
        );
        rowId = Number(result.lastInsertRowid);
      }
      for (const node of nodes) if (!current.has(node)) this.insertNode.run(rowId, node);
      return { id: rowId, created: !existing };
    });
    return { subscription: this.get(id)!, created };
  }

  get(id: number): Subscription | undefined {
    const row = this.byId.get(id);
    return row ? this.fromRow(row) : undefined;
  }

  /** A subscriber's subscriptions (every status), or everyone's. */
  list(subscriber?: string): Subscription[] {
    const rows = subscriber === undefined ? this.all.all() : this.bySubscriber.all(subscriber);
    return rows.map((r) => this.fromRow(r));
  }

  setStatus(id: number, status: SubscriptionStatus, at = Date.now()): boolean {
    if (!SUBSCRIPTION_STATUSES.includes(status))
      throw new InvalidSubscriptionError(`unknown status "${status}"`);
    return this.setStatusStmt.run(status, at, id).changes === 1;
  }

  setExpiry(id: number, expiresAt: number | null, at = Date.now()): boolean {
    return this.setExpiryStmt.run(expiresAt, at, id).changes === 1;
  }

  /** Revokes every subscription of the subscriber; returns how many changed. */
  revokeAll(subscriber: string, at = Date.now()): number {
    return this.revokeAllStmt.run(at, subscriber).changes;
  }

  /**
   * Takes nodes out of the subscriber's node-list subscriptions (a list left empty is revoked).
   * An all-nodes subscription is left alone: revoke it with `revokeAll`. Returns how many node
   * entries were removed.
   */
  removeNodes(subscriber: string, nodeIds: readonly string[], at = Date.now()): number {
    return this.atomically(() => {
      let removed = 0;
      for (const node of nodeIds) removed += this.removeNodeStmt.run(node, subscriber).changes;
      this.revokeEmptyStmt.run(at, subscriber);
      return removed;
    });
  }

  /**
   * Why `allows` says no, when the reason is a lapse: the most recently ended subscription that
   * would cover `nodeId` had it not expired (a paid one names its billing subscription in `reference`).
   */
  lapsed(subscriber: string, nodeId: string, now = Date.now()): Subscription | undefined {
    const row = this.lapsedStmt.get(subscriber, now, nodeId);
    return row ? this.fromRow(row) : undefined;
  }

  /** Whether an active, unexpired subscription of `subscriber` covers `nodeId` at `now`. */
  allows(subscriber: string, nodeId: string, now = Date.now()): boolean {
    return this.allowsStmt.get(subscriber, now, nodeId) !== undefined;
  }
}
