import type { HubBus } from '../src/events.js';
import { Actor } from '../src/kernel/actor.js';
import type { Mailbox } from '../src/kernel/mailbox.js';
import type { NodeUpdate } from '../src/mesh/node.js';
import { NodeRepository } from '../src/store/nodes-repository.js';
import type { StoreActor } from './store.js';

/** Keeps the node table: every `node.updated` is merged into the node's row. */
export class NodeDirectoryActor extends Actor {
  readonly name = 'node-directory';
  override readonly dependsOn = ['store'];
  private repo: NodeRepository | undefined;
  private readonly inbox: Mailbox<NodeUpdate>;

  constructor(private readonly deps: { bus: HubBus; store: StoreActor }) {
    super();
    this.inbox = this.createMailbox<NodeUpdate>('updates', {
      capacity: 5_000,
      overflow: 'drop-oldest',
      handle: (update) => {
        this.repo?.upsert(update);
      },
    });
  }

  get repository(): NodeRepository {
    if (!this.repo) throw new Error('the node directory is not started');
    return this.repo;
  }

  async start(): Promise<void> {
    this.repo = new NodeRepository(this.deps.store.db);
    this.inbox.reopen();
    this.deps.bus.on(this.name, 'node.updated', (u) => this.inbox.post(u));
  }

  async stop(): Promise<void> {
    this.deps.bus.removeOwner(this.name);
    this.inbox.close();
    await this.inbox.idle();
  }
}
