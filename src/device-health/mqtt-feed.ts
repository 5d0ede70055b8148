/**
 * Device health on MQTT (README "MQTT topics"): `meshhub/device-health/<node_id>`, retained, the
 * node's newest values as `/api/v1/device-health/latest` lists them, published after each commit
 * that touched the node; read by the `integration` and `admin` roles like readings. A renumbered
 * node's old topic is cleared (an empty retained message) and its new one published.
 */
import type { ModuleMqtt } from '../module.js';
import type { HealthRow } from './columns.js';
import type { HealthService } from './health-service.js';

export const DEVICE_HEALTH_TOPIC_ROOT = 'meshhub/device-health';
export const deviceHealthTopic = (nodeId: string) => `${DEVICE_HEALTH_TOPIC_ROOT}/${nodeId}`;

export interface DeviceHealthFeed {
  stored(rows: readonly HealthRow[]): void;
  moved(oldNodeId: string, newNodeId: string): void;
}

export function mqttDeviceHealthFeed(mqtt: ModuleMqtt, service: HealthService): DeviceHealthFeed {
  mqtt.topic(`${DEVICE_HEALTH_TOPIC_ROOT}/#`, { readers: 'integration' });
  const publish = (nodeId: string) => {
    const latest = service.latestOf(nodeId);
    if (latest !== undefined) mqtt.publish(deviceHealthTopic(nodeId), latest, { retain: true });
  };
  return {
    stored(rows) {
      for (const nodeId of new Set(rows.map((r) => r.nodeId))) publish(nodeId);
    },
    moved(oldNodeId, newNodeId) {
      mqtt.publish(deviceHealthTopic(oldNodeId), '', { retain: true });
      publish(newNodeId);
    },
  };
}
