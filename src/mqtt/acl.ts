/**
 * Who may publish and subscribe where, by role (README "MQTT access"):
 *
 * | role                  | publish                                   | subscribe                     |
 * |-----------------------|-------------------------------------------|-------------------------------|
 * | `device` (`ingest`)   | `msh/#`, `meshhub/ingest/#`               | `msh/#` (Meshtastic downlink) |
 * | `integration`         | `homeassistant/status` (HA's birth/will)  | `meshhub/#`, `homeassistant/#` |
 * | `admin`               | both of the above                         | everything, `$SYS/#` included |
 *
 * Nobody but the hub itself publishes on the hub's own event topics (HUB_OWNED_PATTERNS and
 * the topics modules declare, ModuleTopicRules): the hub publishes with `broker.publish`, which
 * no ACL sees. `$`-topics are the broker's. A module's topic declared with `readers: 'admin'`
 * reaches admins only; with `refuseOthers`, a non-admin naming it in a SUBSCRIBE is refused.
 * With `readers: 'integration'` it is read like the core's readings and nodes.
 */
import {
  EVENT_PATTERNS,
  filterWithin,
  HA_STATUS_TOPIC,
  INGEST_READINGS_TOPIC,
  isHubOwnedTopic,
  isIngestTopic,
  MESH_ROOT,
  ModuleTopicRules,
  type TopicPattern,
} from './topics.js';

/** No module topics: the core's own table alone. */
const CORE_ONLY = new ModuleTopicRules();

/** The roles the broker knows; any other role a user carries is ignored here. */
export const MQTT_ROLES = ['device', 'ingest', 'integration', 'admin'] as const;

const DOWNLINK_PATTERNS: readonly TopicPattern[] = [[MESH_ROOT, '#']];

function has(roles: readonly string[], ...wanted: string[]): boolean {
  for (const role of roles) if (wanted.includes(role)) return true;
  return false;
}

export function hasMqttRole(roles: readonly string[]): boolean {
  return has(roles, ...MQTT_ROLES);
}

/** What a topic name is to the broker, worked out once per publish. */
export type TopicClass = 'reserved' | 'ha-status' | 'hub' | 'ingest' | 'other';

export function topicClass(topic: string, modules: ModuleTopicRules = CORE_ONLY): TopicClass {
  // The busiest topic first: every plain sensor publishes here.
  if (topic === INGEST_READINGS_TOPIC) return 'ingest';
  if (topic.startsWith('$')) return 'reserved';
  if (topic === HA_STATUS_TOPIC) return 'ha-status';
  if (isHubOwnedTopic(topic) || modules.isDeclared(topic)) return 'hub';
  return isIngestTopic(topic) ? 'ingest' : 'other';
}

export function mayPublishClass(roles: readonly string[], kind: TopicClass): boolean {
  if (kind === 'ha-status') return has(roles, 'integration', 'admin');
  return kind === 'ingest' && has(roles, 'device', 'ingest', 'admin');
}

export function mayPublish(
  roles: readonly string[],
  topic: string,
  modules: ModuleTopicRules = CORE_ONLY,
): boolean {
  return mayPublishClass(roles, topicClass(topic, modules));
}

export function maySubscribe(
  roles: readonly string[],
  filter: string,
  modules: ModuleTopicRules = CORE_ONLY,
): boolean {
  if (has(roles, 'admin')) return true;
  if (modules.refusesNonAdmin(filter)) return false;
  if (has(roles, 'integration') && EVENT_PATTERNS.some((p) => filterWithin(filter, p))) return true;
  return has(roles, 'device', 'ingest') && DOWNLINK_PATTERNS.some((p) => filterWithin(filter, p));
}
