/**
 * Small facts the hub remembers across restarts (the `hub_state` table). Each key has one
 * owner: `radio.my_node_num` is written by the radio actor only, which announces it on the
 * retained `radio.status`; everyone else reads it from the bus.
 */
import type { Database, Statement } from './database.js';

const MY_NODE_NUM = 'radio.my_node_num';

export class HubState {
  private readonly get: Statement<[string], { value: string }>;
  private readonly put: Statement<[string, string]>;

  constructor(db: Database) {
    this.get = db.prepare('SELECT value FROM hub_state WHERE key = ?');
    this.put = db.prepare('INSERT OR REPLACE INTO hub_state (key, value) VALUES (?, ?)');
  }

  /** The hub radio's node number, as last reported by the device. */
  myNodeNum(): number | undefined {
    const row = this.get.get(MY_NODE_NUM);
    const n = row ? Number(row.value) : Number.NaN;
    return Number.isInteger(n) ? n : undefined;
  }

  rememberMyNodeNum(num: number): void {
    if (this.myNodeNum() !== num >>> 0) this.put.run(MY_NODE_NUM, String(num >>> 0));
  }
}
