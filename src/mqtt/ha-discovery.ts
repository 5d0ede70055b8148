/**
 * Home Assistant MQTT discovery (README "Home Assistant"): every node with readings is a device,
 * with one sensor entity per metric it has reported, configured at
 * `homeassistant/sensor/<node>/<metric>/config` (retained). An entity reads its value out of the
 * node's retained latest reading (`meshhub/readings/<node_id>`) with a value template, and is
 * available while both the hub (`meshhub/status`) and the node
 * (`meshhub/nodes/<node_id>/availability`, from its last-heard time) are `online`.
 *
 * Device classes and units follow HA's sensor device classes; `wind_direction` uses the
 * `wind_direction` class with the `measurement_angle` state class (HA 2025.3 and newer), and gas
 * resistance, which has no device class, is a plain measurement in kΩ.
 */
import { METRIC_API_NAMES, type ReadingMetric } from '../domain/reading.js';
import { availabilityTopic, HA_PREFIX, HUB_STATUS_TOPIC, haSafeId, readingTopic } from './topics.js';

interface SensorSpec {
  name: string;
  unit: string;
  deviceClass?: string;
  stateClass: 'measurement' | 'measurement_angle';
  icon?: string;
}

export const HA_SENSORS: Record<ReadingMetric, SensorSpec> = {
  temperatureC: { name: 'Temperature', unit: '°C', deviceClass: 'temperature', stateClass: 'measurement' },
  humidityPercent: { name: 'Humidity', unit: '%', deviceClass: 'humidity', stateClass: 'measurement' },
  pressurePa: { name: 'Pressure', unit: 'Pa', deviceClass: 'pressure', stateClass: 'measurement' },
  windSpeedMs: { name: 'Wind speed', unit: 'm/s', deviceClass: 'wind_speed', stateClass: 'measurement' },
  windDirection: {
    name: 'Wind direction',
    unit: '°',
    deviceClass: 'wind_direction',
    stateClass: 'measurement_angle',
  },
  pm25Ugm3: { name: 'PM2.5', unit: 'µg/m³', deviceClass: 'pm25', stateClass: 'measurement' },
  pm10Ugm3: { name: 'PM10', unit: 'µg/m³', deviceClass: 'pm10', stateClass: 'measurement' },
  gasResistanceKohm: {
    name: 'Gas resistance',
    unit: 'kΩ',
    stateClass: 'measurement',
    icon: 'mdi:air-filter',
  },
};

export interface DiscoveryDevice {
  nodeId: string;
  /** The node's long name, else short name; the node id when it has none. */
  name?: string;
  /** Hardware model (`HELTEC_V3`) when the mesh told it. */
  model?: string;
}

export interface DiscoveryMessage {
  topic: string;
  payload: string;
}

export function discoveryTopic(nodeId: string, metric: ReadingMetric): string {
  return `${HA_PREFIX}/sensor/${haSafeId(nodeId)}/${METRIC_API_NAMES[metric]}/config`;
}

export function discoveryMessage(
  device: DiscoveryDevice,
  metric: ReadingMetric,
  hubVersion: string,
): DiscoveryMessage {
  const spec = HA_SENSORS[metric];
  const field = METRIC_API_NAMES[metric];
  const safe = haSafeId(device.nodeId);
  const isMeshNode = /^![0-9a-f]{8}$/.test(device.nodeId);
  const config = {
    name: spec.name,
    unique_id: `meshhub_${safe}_${field}`,
    state_topic: readingTopic(device.nodeId),
    value_template: `{{ value_json.${field} }}`,
    ...(spec.deviceClass ? { device_class: spec.deviceClass } : {}),
    unit_of_measurement: spec.unit,
    state_class: spec.stateClass,
    ...(spec.icon ? { icon: spec.icon } : {}),
    availability: [{ topic: HUB_STATUS_TOPIC }, { topic: availabilityTopic(device.nodeId) }],
    availability_mode: 'all',
    device: {
      identifiers: [`meshhub_${safe}`],
      name: device.name ?? device.nodeId,
      model: device.model ?? (isMeshNode ? 'Meshtastic node' : 'Sensor'),
      ...(isMeshNode ? { manufacturer: 'Meshtastic' } : {}),
    },
    origin: { name: 'meshhub', sw_version: hubVersion },
  };
  return { topic: discoveryTopic(device.nodeId, metric), payload: JSON.stringify(config) };
}
