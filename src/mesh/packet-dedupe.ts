/**
 * Remembers which (sender, packet id) pairs the hub has seen lately, so that a packet heard
 * through several MQTT gateways, or through the radio and a gateway, is processed once
 * (docs/architecture.md "Meshtastic facts": dedupe on (from, packet id)). One instance is shared by the
 * radio path and the MQTT path.
 *
 * Bounded two ways: a key is forgotten `windowMs` after it was first seen (the same packet
 * reaches every gateway within seconds; packet ids repeat after a while), and at most
 * `capacity` keys are kept (the oldest go first), so a flood of fresh ids cannot grow memory.
 */

export interface PacketDedupeOptions {
  /** Most keys kept. Default 20 000 (a busy mesh hears a few hundred packets in ten minutes). */
  capacity?: number;
  /** How long a key is remembered. Default 10 minutes. */
  windowMs?: number;
}

export class PacketDedupe {
  private readonly capacity: number;
  private readonly windowMs: number;
  /** key → when it was first seen; Map order is insertion order, i.e. oldest first. */
  private readonly seen = new Map<string, number>();
  private duplicateCount = 0;

  constructor(options: PacketDedupeOptions = {}) {
    this.capacity = Math.max(1, Math.trunc(options.capacity ?? 20_000));
    this.windowMs = Math.max(0, options.windowMs ?? 600_000);
  }

  /**
   * True the first time (from, id) is seen within the window (and records it); false for a
   * repeat. A packet id of 0 is "no id" (MeshPacket.id is unset): such packets cannot be told
   * apart, so each counts as new.
   */
  firstSighting(from: number, id: number, now = Date.now()): boolean {
    if (id === 0) return true;
    this.expire(now);
    const key = `${from >>> 0}:${id >>> 0}`;
    const at = this.seen.get(key);
    if (at !== undefined && now - at < this.windowMs) {
      this.duplicateCount++;
      return false;
    }
    if (at !== undefined) this.seen.delete(key);
    this.seen.set(key, now);
    if (this.seen.size > this.capacity) {
      const oldest = this.seen.keys().next();
      if (!oldest.done) this.seen.delete(oldest.value);
    }
    return true;
  }

  get size(): number {
    return this.seen.size;
  }

  /** Repeats refused since start. */
  get duplicates(): number {
    return this.duplicateCount;
  }

  private expire(now: number): void {
    for (const [key, at] of this.seen) {
      if (now - at < this.windowMs) return;
      this.seen.delete(key);
    }
  }
}
