/**
 * Rule evaluation: bus events in, transitions out. Pure and synchronous (no I/O), so the bench
 * measures exactly this. Rules are indexed by kind, so an event costs the rules that can use it;
 * nodes gone quiet and links lost are found by `check()`, called on a timer.
 *
 * State per (rule, subject) — a subject is a node, or `from>to` for a link: whether the rule is
 * on for it, and when it last fired. A condition that holds fires once ("on"), and "off" when it
 * ends; the instant kinds (node_online, rebooted, new_node) only fire. The repeat limit
 * (`repeat_minutes`) keeps a flapping node from paging again within that time: the transition is
 * still reported (MQTT state follows it) but marked `suppressed`.
 */
import type { DeviceHealthSample, MeshLink } from '../domain/mesh.js';
import type { NodeUpdate } from '../domain/node.js';
import { METRIC_API_NAMES, type Reading, type ReadingMetric } from '../domain/reading.js';
import type { RuleKind } from './schemas.js';
import type { Rule } from './store.js';

export interface Transition {
  rule: Rule;
  nodeId: string;
  subject: string;
  state: 'on' | 'off';
  message: string;
  at: number;
  /** Within the rule's repeat limit: not stored or delivered, only MQTT state follows. */
  suppressed: boolean;
}

const INSTANT: ReadonlySet<RuleKind> = new Set(['node_online', 'rebooted', 'new_node']);
const MAX_LINKS = 20_000;
const MAX_BATTERY_SAMPLES = 64;
const METRIC_FIELDS = new Map<string, ReadingMetric>(
  Object.entries(METRIC_API_NAMES).map(([field, api]) => [api, field as ReadingMetric]),
);

interface Compiled {
  rule: Rule;
  nodes: ReadonlySet<string> | undefined;
  field: ReadingMetric | undefined;
}

interface SubjectState {
  on: boolean;
  lastFired: number | undefined;
}

const minutes = (n: number | undefined) => (n ?? 0) * 60_000;

export class RuleEngine {
  private byKind = new Map<RuleKind, Compiled[]>();
  private readonly state = new Map<number, Map<string, SubjectState>>();
  private readonly lastHeard = new Map<string, number>();
  private readonly names = new Map<string, string>();
  private readonly uptime = new Map<string, number>();
  private readonly battery = new Map<string, Array<[number, number]>>();
  private readonly links = new Map<string, MeshLink>();
  private batteryWindowMs = 0;

  constructor(private readonly now: () => number = Date.now) {}

  setRules(rules: readonly Rule[]): void {
    const byKind = new Map<RuleKind, Compiled[]>();
    let window = 0;
    for (const rule of rules) {
      if (!rule.enabled) continue;
      const compiled: Compiled = {
        rule,
        nodes: rule.nodes.length > 0 ? new Set(rule.nodes) : undefined,
        field: rule.metric ? METRIC_FIELDS.get(rule.metric) : undefined,
      };
      const list = byKind.get(rule.kind) ?? [];
      list.push(compiled);
      byKind.set(rule.kind, list);
      if (rule.kind === 'battery_falling') window = Math.max(window, minutes(rule.minutes));
    }
    this.byKind = byKind;
    this.batteryWindowMs = window;
    const live = new Set(rules.map((r) => r.id));
    for (const id of this.state.keys()) if (!live.has(id)) this.state.delete(id);
  }

  /** Nodes already known (from the node table at start): not new, and watched for silence. */
  knowNodes(
    nodes: ReadonlyArray<{ nodeId: string; lastHeard?: number | undefined; shortName?: string | undefined }>,
  ): void {
    for (const n of nodes) {
      this.lastHeard.set(n.nodeId, n.lastHeard ?? 0);
      if (n.shortName) this.names.set(n.nodeId, n.shortName);
    }
  }

  /** When each (rule, subject) last fired, from the stored firings. */
  restoreLastFired(rows: ReadonlyArray<{ ruleId: number; subject: string; at: number }>): void {
    for (const r of rows) this.subject(r.ruleId, r.subject).lastFired = r.at;
  }

  get nodeCount(): number {
    return this.lastHeard.size;
  }

  onNodeUpdated(u: NodeUpdate): Transition[] {
    const out: Transition[] = [];
    const id = u.nodeId;
    if (u.shortName) this.names.set(id, u.shortName);
    const previous = this.lastHeard.get(id);
    if (previous === undefined) {
      this.lastHeard.set(id, u.lastHeard ?? 0);
      for (const c of this.rulesFor('new_node', id))
        this.fire(out, c, id, id, true, () => `New node ${this.label(id)} heard`);
    }
    if (u.lastHeard !== undefined && previous !== undefined && u.lastHeard > previous) {
      this.lastHeard.set(id, u.lastHeard);
      for (const c of this.rulesFor('node_offline', id))
        this.fire(out, c, id, id, false, () => `${this.label(id)} heard again`);
      if (previous > 0) {
        const away = u.lastHeard - previous;
        for (const c of this.rulesFor('node_online', id))
          if (away >= minutes(c.rule.minutes))
            this.fire(
              out,
              c,
              id,
              id,
              true,
              () => `${this.label(id)} is back after ${Math.round(away / 60_000)} min`,
            );
      }
    }
    if (u.batteryLevel !== undefined) this.batteryLevel(out, id, u.batteryLevel, u.lastHeard ?? this.now());
    return out;
  }

  onDeviceMetrics(s: DeviceHealthSample): Transition[] {
    const out: Transition[] = [];
    const id = s.nodeId;
    if (s.uptimeSeconds !== undefined) {
      const before = this.uptime.get(id);
      this.uptime.set(id, s.uptimeSeconds);
      if (before !== undefined && s.uptimeSeconds < before)
        for (const c of this.rulesFor('rebooted', id))
          this.fire(
            out,
            c,
            id,
            id,
            true,
            () => `${this.label(id)} rebooted (uptime ${s.uptimeSeconds} s, was ${before} s)`,
          );
    }
    if (s.batteryLevel !== undefined) this.batteryLevel(out, id, s.batteryLevel, s.at);
    return out;
  }

  onReadings(readings: readonly Reading[]): Transition[] {
    const out: Transition[] = [];
    const rules = this.byKind.get('reading_out_of_range');
    if (!rules) return out;
    for (const r of readings) {
      for (const c of rules) {
        if (!c.field || (c.nodes && !c.nodes.has(r.nodeId))) continue;
        const v = r[c.field];
        if (v === undefined) continue;
        const { min, max, metric } = c.rule;
        const outside = (min !== undefined && v < min) || (max !== undefined && v > max);
        this.fire(out, c, r.nodeId, r.nodeId, outside, () =>
          outside
            ? `${metric} of ${this.label(r.nodeId)} is ${v}, outside ${min ?? '−∞'}…${max ?? '∞'}`
            : `${metric} of ${this.label(r.nodeId)} is back in range (${v})`,
        );
      }
    }
    return out;
  }

  onLink(link: MeshLink): Transition[] {
    const out: Transition[] = [];
    const key = `${link.from}>${link.to}`;
    this.links.delete(key);
    this.links.set(key, link);
    if (this.links.size > MAX_LINKS) this.links.delete(this.links.keys().next().value!);
    for (const c of this.byKind.get('link_lost') ?? [])
      if (this.watches(c, link.from) || this.watches(c, link.to))
        this.fire(out, c, link.from, key, false, () => `Link ${link.from} → ${link.to} heard again`);
    return out;
  }

  /** A node reappeared under a new number (node.renumbered): what is known of it moves along. */
  onRenumbered(oldNodeId: string, newNodeId: string): void {
    for (const map of [this.lastHeard, this.names, this.uptime, this.battery] as Array<
      Map<string, unknown>
    >) {
      const value = map.get(oldNodeId);
      map.delete(oldNodeId);
      if (value !== undefined && !map.has(newNodeId)) map.set(newNodeId, value);
    }
  }

  /** Nodes not heard and links not heard for their rules' minutes. */
  check(): Transition[] {
    const out: Transition[] = [];
    const now = this.now();
    for (const c of this.byKind.get('node_offline') ?? []) {
      const silence = minutes(c.rule.minutes);
      const consider = (id: string, heard: number | undefined) => {
        if (!heard) return;
        if (now - heard >= silence)
          this.fire(
            out,
            c,
            id,
            id,
            true,
            () => `${this.label(id)} not heard for ${Math.round((now - heard) / 60_000)} min`,
          );
      };
      if (c.nodes) for (const id of c.nodes) consider(id, this.lastHeard.get(id));
      else for (const [id, heard] of this.lastHeard) consider(id, heard);
    }
    for (const c of this.byKind.get('link_lost') ?? []) {
      const silence = minutes(c.rule.minutes);
      for (const [key, link] of this.links) {
        if (!this.watches(c, link.from) && !this.watches(c, link.to)) continue;
        if (now - link.lastHeard >= silence)
          this.fire(
            out,
            c,
            link.from,
            key,
            true,
            () =>
              `Link ${link.from} → ${link.to} not heard for ${Math.round((now - link.lastHeard) / 60_000)} min`,
          );
      }
    }
    return out;
  }

  private batteryLevel(out: Transition[], id: string, level: number, at: number): void {
    if (level > 100) return; // 101: powered, no battery to watch
    for (const c of this.rulesFor('battery_low', id)) {
      const low = level < c.rule.threshold!;
      this.fire(out, c, id, id, low, () =>
        low
          ? `Battery of ${this.label(id)} at ${level} % (below ${c.rule.threshold} %)`
          : `Battery of ${this.label(id)} at ${level} %`,
      );
    }
    const falling = this.byKind.get('battery_falling');
    if (!falling) return;
    const samples = this.battery.get(id) ?? [];
    this.battery.set(id, samples);
    samples.push([at, level]);
    while (
      samples.length > MAX_BATTERY_SAMPLES ||
      (samples.length > 0 && at - samples[0]![0] > this.batteryWindowMs)
    )
      samples.shift();
    for (const c of falling) {
      if (!this.watches(c, id)) continue;
      const since = at - minutes(c.rule.minutes);
      let peak = level;
      for (const [t, l] of samples) if (t >= since && l > peak) peak = l;
      const drop = peak - level;
      this.fire(out, c, id, id, drop >= c.rule.threshold!, () =>
        drop >= c.rule.threshold!
          ? `Battery of ${this.label(id)} fell ${drop} points to ${level} %`
          : `Battery of ${this.label(id)} steady at ${level} %`,
      );
    }
  }

  private *rulesFor(kind: RuleKind, id: string): Iterable<Compiled> {
    const list = this.byKind.get(kind);
    if (list) for (const c of list) if (!c.nodes || c.nodes.has(id)) yield c;
  }

  private watches(c: Compiled, id: string): boolean {
    return !c.nodes || c.nodes.has(id);
  }

  private label(id: string): string {
    const name = this.names.get(id);
    return name ? `${name} (${id})` : id;
  }

  private subject(ruleId: number, subject: string): SubjectState {
    const byRule = this.state.get(ruleId) ?? new Map<string, SubjectState>();
    this.state.set(ruleId, byRule);
    const s = byRule.get(subject) ?? { on: false, lastFired: undefined };
    byRule.set(subject, s);
    return s;
  }

  private fire(
    out: Transition[],
    c: Compiled,
    nodeId: string,
    subject: string,
    on: boolean,
    message: () => string,
  ): void {
    const instant = INSTANT.has(c.rule.kind);
    const byRule = this.state.get(c.rule.id);
    const existing = byRule?.get(subject);
    if (!on) {
      if (!existing?.on) return;
      existing.on = false;
      out.push({
        rule: c.rule,
        nodeId,
        subject,
        state: 'off',
        message: message(),
        at: this.now(),
        suppressed: false,
      });
      return;
    }
    if (existing?.on && !instant) return;
    const s = existing ?? this.subject(c.rule.id, subject);
    const at = this.now();
    const suppressed = s.lastFired !== undefined && at - s.lastFired < minutes(c.rule.repeat_minutes);
    if (!instant) s.on = true;
    if (!suppressed) s.lastFired = at;
    out.push({ rule: c.rule, nodeId, subject, state: 'on', message: message(), at, suppressed });
  }
}
