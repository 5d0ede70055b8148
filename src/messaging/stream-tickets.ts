/**
 * Single-use tickets for the live stream. A browser's EventSource cannot send an Authorization
 * header, and a bearer token in a URL ends up in logs and browser history. So a client holding
 * the token asks for a ticket (POST, with the header) and opens the stream with `?ticket=…`:
 * the ticket is random (256 bits), valid for 30 s, works once, and is kept only as a SHA-256
 * hash, so a ticket that does end up in a log is already spent or expired.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Principal } from '../auth/hub-identity.js';

export const TICKET_TTL_MS = 30_000;
const MAX_OUTSTANDING = 1_000;

interface Entry {
  principal: Principal;
  expiresAt: number;
}

const digest = (ticket: string) => createHash('sha256').update(ticket).digest('base64url');

export class StreamTickets {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly now: () => number = Date.now) {}

  issue(principal: Principal): { ticket: string; expiresIn: number } {
    const now = this.now();
    if (this.entries.size >= MAX_OUTSTANDING) {
      for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(key);
      for (const key of this.entries.keys()) {
        if (this.entries.size < MAX_OUTSTANDING) break;
        this.entries.delete(key);
      }
    }
    const ticket = randomBytes(32).toString('base64url');
    this.entries.set(digest(ticket), { principal, expiresAt: now + TICKET_TTL_MS });
    return { ticket, expiresIn: TICKET_TTL_MS / 1000 };
  }

  /** The principal the ticket was issued to, once; undefined when unknown, used or expired. */
  redeem(ticket: string): Principal | undefined {
    if (!/^[A-Za-z0-9_-]{43}$/.test(ticket)) return undefined;
    const key = digest(ticket);
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    return entry.expiresAt > this.now() ? entry.principal : undefined;
  }
}
