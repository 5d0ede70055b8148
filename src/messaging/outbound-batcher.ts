/**
 * Group commit for POST /api/v1/messages: the messages posted while the event loop is busy are
 * stored in one SQLite transaction at the next `setImmediate`, and each request gets its 202 only
 * after that commit (a queued message is durable before anyone is told so). One commit per burst
 * instead of one per message: on the Pi's SD card the commit and the WAL pages are the cost.
 * Each message is its own savepoint, so one that fails does not take the others with it.
 *
 * A retry with the same Idempotency-Key can arrive while the first is still waiting for the
 * commit: `pending` hands it the first request's outcome instead of storing twice.
 */
import { GroupCommit } from '../kernel/group-commit.js';
import type { Database } from '../store/database.js';
import { type Atomically, transactionOn } from './atomically.js';
import type { Message } from './message.js';
import type { MessageRepository, NewOutbound } from './message-repository.js';

interface Waiting {
  input: NewOutbound;
  resolve(message: Message): void;
  reject(error: unknown): void;
}

export interface PendingIdempotent {
  requestHash: string;
  stored: Promise<Message>;
}

export class OutboundBatcher {
  private readonly group = new GroupCommit<Waiting>({ commit: (batch) => this.store(batch) });
  private readonly pendingKeys = new Map<string, PendingIdempotent>();

  private readonly atomically: Atomically;

  constructor(
    db: Database,
    private readonly repo: MessageRepository,
  ) {
    this.atomically = transactionOn(db);
  }

  submit(input: NewOutbound): Promise<Message> {
    // Each message has its own outcome (its own savepoint); the group's shared promise only says
    // the transaction ended, so it is not awaited here.
    const stored = new Promise<Message>((resolve, reject) => {
      void this.group.submitAll([{ input, resolve, reject }]);
    });
    const idem = input.idempotency;
    if (idem) {
      const key = `${input.owner}\u0000${idem.key}`;
      this.pendingKeys.set(key, { requestHash: idem.requestHash, stored });
      const forget = () => this.pendingKeys.delete(key);
      stored.then(forget, forget);
    }
    return stored;
  }

  /** A message with this owner and Idempotency-Key that is waiting for its commit. */
  pending(owner: string, key: string): PendingIdempotent | undefined {
    return this.pendingKeys.get(`${owner}\u0000${key}`);
  }

  private store(batch: Waiting[]): void {
    let outcomes: Array<{ message: Message } | { error: unknown }>;
    try {
      outcomes = this.atomically(() =>
        batch.map((item) => {
          try {
            return { message: this.repo.createOutbound(item.input) };
          } catch (error) {
            return { error };
          }
        }),
      );
    } catch (error) {
      for (const item of batch) item.reject(error);
      return;
    }
    outcomes.forEach((outcome, i) => {
      const item = batch[i]!;
      if ('message' in outcome) item.resolve(outcome.message);
      else item.reject(outcome.error);
    });
  }
}
