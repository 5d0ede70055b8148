import type { HubBus } from '../domain/events.js';
import { type NodeUpdate, nodeIdFromNum } from '../domain/node.js';
import { Actor } from '../kernel/actor.js';
import type { Mailbox } from '../kernel/mailbox.js';
import type { Logger } from '../log.js';
import type { Database } from '../store/database.js';
import { NodeRepository } from '../store/nodes-repository.js';
import { isLinkableKey, judgeRenumbering, sameKey } from './renumber.js';

/** What the directory counts (nodes module metrics). */
export interface NodeDirectoryCounters {
  renumbered(): void;
  keyMismatch(): void;
}

/** New numbers whose link waits for the old number to fall silent; bounded (a flood of keys cannot grow it). */
const MAX_PENDING = 1_000;

/**
 * Keeps the node table: every `node.updated` is merged into the node's row; a node heard with the
 * public key of a known node under the number firmware 2.8 derives from it is linked to that
 * node (renumber.ts), and `node.renumbered` is announced once.
 */
export class NodeDirectoryActor extends Actor {
  readonly name = 'node-directory';
  override readonly dependsOn = ['store'];
  private repo: NodeRepository | undefined;
  private readonly inbox: Mailbox<NodeUpdate>;
  private readonly pending = new Set<number>();

  constructor(
    private readonly deps: {
      bus: HubBus;
      db: Database;
      log?: Logger;
      quietMs?: number;
      counters?: NodeDirectoryCounters;
      now?: () => number;
    },
  ) {
    super();
    this.inbox = this.createMailbox<NodeUpdate>('updates', {
      capacity: 5_000,
      overflow: 'drop-oldest',
      handle: (update) => this.onUpdate(update),
    });
  }

  async start(): Promise<void> {
    this.repo = new NodeRepository(this.deps.db);
    this.inbox.reopen();
    this.deps.bus.on(this.name, 'node.updated', (u) => this.inbox.post(u));
  }

  async stop(): Promise<void> {
    this.deps.bus.removeOwner(this.name);
    this.inbox.close();
    await this.inbox.idle();
  }

  private onUpdate(update: NodeUpdate): void {
    const repo = this.repo;
    if (!repo) return;
    repo.upsert(update);
    const num = update.nodeNum >>> 0;
    const key = update.publicKey;
    if (!isLinkableKey(key) && !this.pending.has(num)) return;
    const stored = repo.publicKey(num);
    if (key && stored && !sameKey(key, stored)) {
      // Not a renumbering and not taken: the number keeps the first key heard for it.
      this.deps.counters?.keyMismatch();
      return;
    }
    if (!isLinkableKey(stored)) return;
    const now = (this.deps.now ?? Date.now)();
    const verdict = judgeRenumbering({
      newNum: num,
      storedKey: stored,
      holders: repo.withPublicKey(stored, num).filter((h) => !repo.isOldId(h.nodeId)),
      now,
      quietMs: this.deps.quietMs ?? 0,
    });
    if (verdict.kind === 'wait') {
      if (this.pending.size < MAX_PENDING) this.pending.add(num);
      return;
    }
    this.pending.delete(num);
    if (verdict.kind !== 'link' || !repo.link(verdict.old.nodeNum, num, now)) return;
    const event = { oldNodeId: verdict.old.nodeId, newNodeId: nodeIdFromNum(num), at: now };
    this.deps.log?.info(
      { old: event.oldNodeId, node: event.newNodeId },
      'node renumbered; its history follows it',
    );
    this.deps.counters?.renumbered();
    this.deps.bus.emit('node.renumbered', event);
  }
}
