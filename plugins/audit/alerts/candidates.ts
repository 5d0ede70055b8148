/**
 * Which rules an event can meet (issue 29, "100 Sigma rules cost ingest ≤ 20%"): most Sigma
 * rules select on one exact operation (or a few), so the engine indexes them by it and an event
 * is tried only against the rules naming its operation and the rules that pin none. A rule's
 * pin must be a promise about its predicate: it never matches an event whose `read` values
 * hold none of `values` (tests/plugins/audit/alert-candidates.test.ts checks it on random rules).
 */
import type { AlertableEvent, EventMemo } from './matcher.js';

export interface RulePin {
  /** Pins with the same key read an event alike: `read` runs once per event and key. */
  key: string;
  /** The values (as `read` returns them) one of which every event the rule matches carries. */
  values: ReadonlySet<string>;
  read(e: AlertableEvent, memo: EventMemo): readonly string[];
}

interface Group {
  read: RulePin['read'];
  byValue: Map<string, number[]>;
}

export class CandidateIndex {
  /** Positions of the rules without a pin: tried on every event. */
  private readonly always: number[] = [];
  private readonly groups = new Map<string, Group>();

  /** `pins[i]` is the pin of the rule at position i (undefined: none). */
  constructor(pins: ReadonlyArray<RulePin | undefined>) {
    pins.forEach((pin, i) => {
      if (!pin) {
        this.always.push(i);
        return;
      }
      let group = this.groups.get(pin.key);
      if (!group) {
        group = { read: pin.read, byValue: new Map() };
        this.groups.set(pin.key, group);
      }
      for (const v of pin.values) {
        const at = group.byValue.get(v);
        if (at) at.push(i);
        else group.byValue.set(v, [i]);
      }
    });
  }

  /** The positions, ascending (the rules' own order), of the rules that may match the event. */
  candidates(e: AlertableEvent, memo: EventMemo): readonly number[] {
    let pinned: number[] | undefined;
    for (const group of this.groups.values()) {
      for (const v of group.read(e, memo)) {
        const at = group.byValue.get(v);
        if (at) (pinned ??= []).push(...at);
      }
    }
    if (!pinned) return this.always;
    return [...new Set([...this.always, ...pinned])].sort((a, b) => a - b);
  }
}
