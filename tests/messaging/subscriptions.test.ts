/** Subscriptions: which nodes a subscriber may message, with status and expiry. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  InvalidSubscriptionError,
  SubscriptionRepository,
} from '../../src/messaging/subscription-repository.js';
import { closeDatabase, type Database, openDatabase } from '../../src/store/database.js';

let db: Database;
let repo: SubscriptionRepository;
beforeEach(() => {
  db = openDatabase(':memory:');
  repo = new SubscriptionRepository(db);
});
afterEach(() => closeDatabase(db));

const A = '!aaaaaaaa';
const B = '!bbbbbbbb';

describe('SubscriptionRepository', () => {
  it('a node list covers those nodes only; all nodes covers every node', () => {
    repo.create({ subscriber: 'alice', nodes: [A], source: 'cli' });
    repo.create({ subscriber: 'bob', nodes: 'all', source: 'cli' });
    expect(repo.allows('alice', A)).toBe(true);
    expect(repo.allows('alice', B)).toBe(false);
    expect(repo.allows('bob', B)).toBe(true);
    expect(repo.allows('carol', A)).toBe(false);
  });

  it('only an active, unexpired subscription allows', () => {
    const now = Date.now();
    const pending = repo.create({
      subscriber: 'alice',
      nodes: [A],
      status: 'pending',
      source: 'billing',
      reference: 'inv-1',
    });
    expect(repo.allows('alice', A, now)).toBe(false);
    expect(repo.setStatus(pending.id, 'active')).toBe(true);
    expect(repo.allows('alice', A, now)).toBe(true);
    repo.setExpiry(pending.id, now + 1_000);
    expect(repo.allows('alice', A, now + 999)).toBe(true);
    expect(repo.allows('alice', A, now + 1_000)).toBe(false);
    expect(repo.get(pending.id)).toMatchObject({
      source: 'billing',
      reference: 'inv-1',
      expiresAt: now + 1_000,
    });
  });

  it('revokes all, or takes nodes out of node lists (an emptied list is revoked)', () => {
    repo.create({ subscriber: 'alice', nodes: [A, B], source: 'cli' });
    const all = repo.create({ subscriber: 'alice', nodes: 'all', source: 'cli' });
    expect(repo.removeNodes('alice', [A])).toBe(1);
    expect(repo.allows('alice', A)).toBe(true); // still by the all-nodes subscription
    repo.setStatus(all.id, 'revoked');
    expect(repo.allows('alice', A)).toBe(false);
    expect(repo.allows('alice', B)).toBe(true);
    repo.removeNodes('alice', [B]);
    expect(repo.list('alice').map((s) => s.status)).toEqual(['revoked', 'revoked']);
    repo.create({ subscriber: 'alice', nodes: 'all', source: 'cli' });
    expect(repo.revokeAll('alice')).toBe(1);
    expect(repo.allows('alice', A)).toBe(false);
  });

  it('refuses malformed input', () => {
    expect(() => repo.create({ subscriber: 'alice', nodes: ['a1b2c3d4'], source: 'cli' })).toThrow(
      InvalidSubscriptionError,
    );
    expect(() => repo.create({ subscriber: 'alice', nodes: [], source: 'cli' })).toThrow(
      InvalidSubscriptionError,
    );
    expect(() => repo.create({ subscriber: '', nodes: 'all', source: 'cli' })).toThrow(
      InvalidSubscriptionError,
    );
    expect(repo.list()).toEqual([]);
  });
});
