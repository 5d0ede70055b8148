/**
 * Which rules an event can meet (issue 29, "100 Sigma rules cost ingest ≤ 20%"): most Sigma
 * rules select on one exact operation (or a few) and read one product's records, so the engine
 * indexes them by source and operation: an event is tried only against the rules of its source
 * that name its operation or pin none. A scope must be a promise about the rule's predicate: it
 * never matches an event of another source, nor one whose `read` values hold none of `values`
 * (tests/plugins/audit/alert-candidates.test.ts checks it on random rules and events).
 */
import type { AlertableEvent, EventMemo } from './matcher.js';

export interface RuleScope {
  /** The sources whose events the rule can match; undefined: any. */
  sources?: ReadonlySet<string> | undefined;
  pin?: RulePin | undefined;
}

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
  /** Positions of the rules without a pin, with their sources (undefined: any). */
  private readonly unpinned: Array<{ at: number; sources: ReadonlySet<string> | undefined }> = [];
  /** Per source: the positions of the unpinned rules that can match its events. */
  private readonly always = new Map<string, number[]>();
  private readonly groups = new Map<string, Group>();
  private readonly sourcesOf: Array<ReadonlySet<string> | undefined>;

  /** `scopes[i]` is the scope of the rule at position i (undefined: every event). */
  constructor(scopes: ReadonlyArray<RuleScope | undefined>) {
    this.sourcesOf = scopes.map((s) => s?.sources);
    scopes.forEach((scope, at) => {
      const pin = scope?.pin;
      if (!pin) {
        this.unpinned.push({ at, sources: scope?.sources });
        return;
      }
      let group = this.groups.get(pin.key);
      if (!group) {
        group = { read: pin.read, byValue: new Map() };
        this.groups.set(pin.key, group);
      }
      for (const v of pin.values) {
        const list = group.byValue.get(v);
        if (list) list.push(at);
        else group.byValue.set(v, [at]);
      }
    });
  }

  private alwaysFor(source: string): number[] {
    let list = this.always.get(source);
    if (!list) {
      list = this.unpinned.filter((r) => !r.sources || r.sources.has(source)).map((r) => r.at);
      this.always.set(source, list);
    }
    return list;
  }

  /** The positions, ascending (the rules' own order), of the rules that may match the event. */
  candidates(e: AlertableEvent, memo: EventMemo): readonly number[] {
    const source = e.source ?? '';
    const always = this.alwaysFor(source);
    let pinned: number[] = NONE;
    for (const group of this.groups.values()) {
      for (const v of group.read(e, memo)) {
        const list = group.byValue.get(v);
        if (!list) continue;
        for (const at of list) {
          const sources = this.sourcesOf[at];
          if (sources && !sources.has(source)) continue;
          if (pinned === NONE) pinned = [];
          pinned.push(at);
        }
      }
    }
    if (!pinned.length) return always;
    if (pinned.length > 1) pinned = [...new Set(pinned)].sort((a, b) => a - b);
    return merge(always, pinned);
  }
}

const NONE: number[] = [];

/** Two ascending lists without common positions, merged. */
function merge(a: readonly number[], b: readonly number[]): number[] {
  const out = new Array<number>(a.length + b.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) out[k++] = a[i]! < b[j]! ? a[i++]! : b[j++]!;
  while (i < a.length) out[k++] = a[i++]!;
  while (j < b.length) out[k++] = b[j++]!;
  return out;
}
