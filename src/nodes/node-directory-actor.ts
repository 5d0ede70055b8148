import type { HubBus } from '../domain/events.js';
import type { NodeUpdate } from '../domain/node.js';
import { Actor } from '../kernel/actor.js';
import type { Mailbox } from '../kernel/mailbox.js';
import type { Database } from '../store/database.js';
import { NodeRepository } from '../store/nodes-repository.js';

/** Keeps the node table: every `node.updated` is merged into the node's row. */
export class NodeDirectoryActor extends Actor {
  readonly name = 'node-directory';
  override readonly dependsOn = ['store'];
  private repo: NodeRepository | undefined;
  private readonly inbox: Mailbox<NodeUpdate>;

  constructor(private readonly deps: { bus: HubBus; db: Database }) {
    super();
    this.inbox = this.createMailbox<NodeUpdate>('updates', {
      capacity: 5_000,
      overflow: 'drop-oldest',
      handle: (update) => {
        this.repo?.upsert(update);
      },
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
}
