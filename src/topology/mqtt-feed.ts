/**
 * Traceroutes and links on MQTT (README "MQTT topics"), read by the `integration` and `admin`
 * roles like readings and nodes (the HTTP reads are open to the LAN too):
 * - `meshhub/traceroutes/<node_id>`: each traceroute to `node_id` once it ends (answered, no
 *   answer, refused) or is heard between other nodes; not retained, an event like a message's.
 * - `meshhub/links/<from>/<to>/<source>`: retained, the link's latest state as `/api/v1/links`
 *   lists it; cleared (an empty retained message) when the link is pruned or its node renumbered.
 */
import type { MeshLink } from '../domain/mesh.js';
import type { ModuleMqtt } from '../module.js';
import { linkJson, tracerouteJson } from './routes.js';
import type { LinkKey, Traceroute } from './topology-repository.js';

export const TRACEROUTES_TOPIC_ROOT = 'meshhub/traceroutes';
export const LINKS_TOPIC_ROOT = 'meshhub/links';

export const tracerouteTopic = (nodeId: string) => `${TRACEROUTES_TOPIC_ROOT}/${nodeId}`;
export const linkTopic = (link: LinkKey) => `${LINKS_TOPIC_ROOT}/${link.from}/${link.to}/${link.source}`;

/** What the topology actor tells the outside as it learns (the module wires it to MQTT). */
export interface TopologyFeed {
  traceroute(trace: Traceroute): void;
  link(link: MeshLink): void;
  linkGone(link: LinkKey): void;
}

/** Declares the topics and publishes there as the hub. */
export function mqttTopologyFeed(mqtt: ModuleMqtt): TopologyFeed {
  mqtt.topic(`${TRACEROUTES_TOPIC_ROOT}/#`, { readers: 'integration' });
  mqtt.topic(`${LINKS_TOPIC_ROOT}/#`, { readers: 'integration' });
  return {
    traceroute: (trace) => mqtt.publish(tracerouteTopic(trace.nodeId), JSON.stringify(tracerouteJson(trace))),
    link: (link) => mqtt.publish(linkTopic(link), JSON.stringify(linkJson(link)), { retain: true }),
    linkGone: (link) => mqtt.publish(linkTopic(link), '', { retain: true }),
  };
}
