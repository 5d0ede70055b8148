/**
 * The broker's topic map (README "MQTT topics"). Ingestion topics are where readings come in;
 * event topics are where the hub tells what it knows, and only the hub publishes there. Features'
 * own event topics are not listed here: each module declares them (src/module.ts ModuleMqtt) and
 * the broker reads them through ModuleTopicRules.
 */
import type { MqttTopicRegistry } from '../module.js';

/** Meshtastic gateways' uplink root (their MQTT module's default root topic is `msh/<region>`). */
export const MESH_ROOT = 'msh';
/** Plain JSON readings from sensors: one Reading or an array (reading-input.ts). */
export const INGEST_READINGS_TOPIC = 'meshhub/ingest/readings';

export const HUB_STATUS_TOPIC = 'meshhub/status';
export const HA_PREFIX = 'homeassistant';
/** Home Assistant's own birth and will (`online` / `offline`), the one HA topic HA itself publishes. */
export const HA_STATUS_TOPIC = `${HA_PREFIX}/status`;

export const readingTopic = (nodeId: string) => `meshhub/readings/${nodeId}`;
export const nodeTopic = (nodeId: string) => `meshhub/nodes/${nodeId}`;
export const availabilityTopic = (nodeId: string) => `meshhub/nodes/${nodeId}/availability`;

/** Topic filters as level arrays: `['msh', '#']`. */
export type TopicPattern = readonly string[];
const pattern = (filter: string): TopicPattern => filter.split('/');

/** Where devices may publish (and Meshtastic gateways subscribe for downlink: `msh/#`). */
export const INGEST_PATTERNS: readonly TopicPattern[] = [pattern('msh/#'), pattern('meshhub/ingest/#')];
/** What integrations may subscribe to. */
export const EVENT_PATTERNS: readonly TopicPattern[] = [pattern('meshhub/#'), pattern(`${HA_PREFIX}/#`)];
/**
 * Published by the hub alone; a client publishing here is refused and disconnected. With the
 * topics modules declare (ModuleTopicRules).
 */
export const HUB_OWNED_PATTERNS: readonly TopicPattern[] = [
  pattern('meshhub/readings/#'),
  pattern('meshhub/nodes/#'),
  pattern(HUB_STATUS_TOPIC),
  pattern(`${HA_PREFIX}/#`),
];

/** True when topic name `topic` (no wildcards) matches `filter` ([MQTT-4.7]: `+` one level, `#` the rest, the parent included). */
export function topicMatches(filter: TopicPattern, topic: string): boolean {
  const levels = topic.split('/');
  for (let i = 0; i < filter.length; i++) {
    const f = filter[i];
    if (f === '#') return true;
    if (i >= levels.length) return false;
    if (f !== '+' && f !== levels[i]) return false;
  }
  return levels.length === filter.length;
}

/**
 * True when every topic that subscription filter `filter` can match is also matched by `allowed`
 * (so `meshhub/readings/+` is within `meshhub/#`, but `+/readings/#` and `#` are not).
 */
export function filterWithin(filter: string, allowed: TopicPattern): boolean {
  const levels = filter.split('/');
  for (let i = 0; i < allowed.length; i++) {
    const a = allowed[i];
    if (a === '#') return true;
    const f = levels[i];
    if (f === undefined) return false;
    if (f === '#') return false;
    if (a === '+') continue;
    if (f === '+' || f !== a) return false;
  }
  return levels.length === allowed.length;
}

/**
 * A matcher for topic names, compiled once: `a/b/#` becomes a prefix test, a literal an equality
 * test (the broker checks every publish against several patterns).
 */
export function compileTopicPatterns(patterns: readonly TopicPattern[]): (topic: string) => boolean {
  const tests = patterns.map((p): ((topic: string) => boolean) => {
    if (p.includes('+')) return (topic) => topicMatches(p, topic);
    if (p[p.length - 1] === '#') {
      const parent = p.slice(0, -1).join('/');
      const prefix = `${parent}/`;
      return parent ? (topic) => topic === parent || topic.startsWith(prefix) : () => true;
    }
    const literal = p.join('/');
    return (topic) => topic === literal;
  });
  return (topic) => {
    for (const test of tests) if (test(topic)) return true;
    return false;
  };
}

export const isIngestTopic = compileTopicPatterns(INGEST_PATTERNS);
export const isHubOwnedTopic = compileTopicPatterns(HUB_OWNED_PATTERNS);

/**
 * The topics modules declared (src/module.ts ModuleMqtt), compiled for the broker: the one list
 * the ACL (who may publish, who may name them in a SUBSCRIBE) and the forwarding filter read.
 * Recompiled when a module declares another.
 */
export class ModuleTopicRules {
  private compiledAt = -1;
  private declaredTest: (topic: string) => boolean = () => false;
  private adminOnlyTest: (topic: string) => boolean = () => false;
  private refusedPatterns: readonly TopicPattern[] = [];

  constructor(private readonly registry?: MqttTopicRegistry) {}

  /** A topic a module publishes on: only the hub publishes there. */
  isDeclared(topic: string): boolean {
    return this.compiled().declaredTest(topic);
  }

  /** Forwarded to admins only (a subscribe ACL cannot split a wildcard such as `meshhub/#`). */
  isAdminOnly(topic: string): boolean {
    return this.compiled().adminOnlyTest(topic);
  }

  /** A non-admin naming this filter in a SUBSCRIBE is refused. */
  refusesNonAdmin(filter: string): boolean {
    return this.compiled().refusedPatterns.some((p) => filterWithin(filter, p));
  }

  private compiled(): this {
    const registry = this.registry;
    if (!registry || registry.version === this.compiledAt) return this;
    const all = registry.declared;
    this.declaredTest = compileTopicPatterns(all.map((d) => pattern(d.filter)));
    const adminOnly = all.filter((d) => d.readers === 'admin');
    this.adminOnlyTest = compileTopicPatterns(adminOnly.map((d) => pattern(d.filter)));
    this.refusedPatterns = adminOnly.filter((d) => d.refuseOthers).map((d) => pattern(d.filter));
    this.compiledAt = registry.version;
    return this;
  }
}

/**
 * A Home Assistant discovery `node_id`/`object_id` ([a-zA-Z0-9_-]): a mesh id `!a1b2c3d4` becomes
 * `a1b2c3d4`; any other id has its other characters replaced and a short hash appended, so two
 * ids differing only in those characters stay apart.
 */
export function haSafeId(nodeId: string): string {
  const mesh = /^!([0-9a-f]{8})$/.exec(nodeId);
  if (mesh) return mesh[1]!;
  const safe = nodeId.replace(/[^a-zA-Z0-9_-]/g, '_');
  if (safe === nodeId) return safe;
  let hash = 0x811c9dc5;
  for (let i = 0; i < nodeId.length; i++) hash = Math.imul(hash ^ nodeId.charCodeAt(i), 0x01000193);
  return `${safe}_${(hash >>> 0).toString(16).padStart(8, '0').slice(0, 6)}`;
}
