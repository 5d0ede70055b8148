/**
 * The simulated mesh: the simulator's own radio (what a client connects to) and the sensor
 * nodes it hears, all derived from the seed. Each node has a sensor profile that decides which
 * EnvironmentMetrics fields it sends, as real sensor boards send only what they measure.
 */
import { Mesh } from '@meshtastic/protobufs';
import { BROADCAST_NODE_NUM, nodeIdFromNum } from '../../domain/node.js';
import type { PresenceSchedule } from './presence.js';
import { hash32, seededRandom } from './random.js';

/** EnvironmentMetrics fields a profile measures (protobuf-es names). */
export type EnvironmentField =
  | 'temperature'
  | 'relativeHumidity'
  | 'barometricPressure'
  | 'windSpeed'
  | 'windDirection'
  | 'gasResistance';

export interface SensorProfile {
  readonly key: string;
  /** Used in the node's long name. */
  readonly label: string;
  readonly environment: readonly EnvironmentField[];
  /** Sends AirQualityMetrics (a PMSA003-style particle sensor). */
  readonly airQuality: boolean;
  readonly hwModel: Mesh.HardwareModel;
}

/** Cycled over the nodes in this order; six nodes show every profile once. */
export const SENSOR_PROFILES: readonly SensorProfile[] = [
  {
    key: 'weather-station',
    label: 'Weather Station',
    environment: ['temperature', 'relativeHumidity', 'barometricPressure', 'windSpeed', 'windDirection'],
    airQuality: false,
    hwModel: Mesh.HardwareModel.RAK4631,
  },
  {
    key: 'temperature-humidity',
    label: 'Thermo-Hygrometer',
    environment: ['temperature', 'relativeHumidity'],
    airQuality: false,
    hwModel: Mesh.HardwareModel.HELTEC_V3,
  },
  {
    key: 'bme680',
    label: 'Air Sensor',
    environment: ['temperature', 'relativeHumidity', 'barometricPressure', 'gasResistance'],
    airQuality: false,
    hwModel: Mesh.HardwareModel.T_ECHO,
  },
  {
    key: 'air-quality',
    label: 'Air Quality',
    environment: ['temperature'],
    airQuality: true,
    hwModel: Mesh.HardwareModel.HELTEC_WSL_V3,
  },
  {
    key: 'bme280',
    label: 'Barometer',
    environment: ['temperature', 'relativeHumidity', 'barometricPressure'],
    airQuality: false,
    hwModel: Mesh.HardwareModel.TBEAM,
  },
  {
    key: 'anemometer',
    label: 'Wind Mast',
    environment: ['windSpeed', 'windDirection'],
    airQuality: false,
    hwModel: Mesh.HardwareModel.STATION_G2,
  },
];

const PLACES = [
  'Ridge',
  'Orchard',
  'Harbor',
  'Mill',
  'Summit',
  'Creek',
  'Meadow',
  'Quarry',
  'Forest',
  'Bridge',
  'Vineyard',
  'Chapel',
  'Lakeside',
  'Hilltop',
  'Farm',
  'Garden',
];

export interface SimPosition {
  /** Degrees, on the 1e-7 grid of Position.latitude_i/longitude_i. */
  latitude: number;
  longitude: number;
  /** Metres above sea level. */
  altitude: number;
}

export interface SimDevice {
  readonly num: number;
  readonly id: string;
  readonly shortName: string;
  readonly longName: string;
  readonly hwModel: Mesh.HardwareModel;
  readonly position: SimPosition | undefined;
}

export interface SimNode extends SimDevice {
  readonly index: number;
  readonly profile: SensorProfile;
  /** Microclimate: this node runs warmer or cooler than the area. */
  readonly climateOffsetC: number;
  /** Typical SNR at the simulator's radio, dB. */
  readonly snrBaseDb: number;
  readonly hopsAway: number;
}

export interface SimNetwork {
  readonly seed: number;
  readonly center: { latitude: number; longitude: number };
  /** The simulator's own radio: MyNodeInfo.my_node_num of every client session. */
  readonly radio: SimDevice;
  readonly nodes: readonly SimNode[];
  /** Which nodes the mesh hears when (presence.ts); absent: every node, always. */
  readonly presence?: PresenceSchedule;
  /** How often each node reboots (device-health.ts); absent: about every nine days. */
  readonly rebootMs?: number;
}

/** Whether the simulated mesh hears `node` at `at` (a node away sends nothing and hears nothing). */
export function isPresent(network: SimNetwork, node: { num: number }, at: number): boolean {
  return network.presence?.isPresent(node.num, at) ?? true;
}

export interface SimNetworkOptions {
  seed: number;
  nodeCount: number;
  center: { latitude: number; longitude: number };
}

export function createSimNetwork({ seed, nodeCount, center }: SimNetworkOptions): SimNetwork {
  const random = seededRandom(hash32(seed, 0x6e6f6465));
  const used = new Set<number>();
  const nextNum = () => {
    for (;;) {
      const num = Math.floor(random() * 0x1_0000_0000) >>> 0;
      // 0..3 are reserved by the firmware; 0xFFFFFFFF is broadcast.
      if (num > 0xff && num !== BROADCAST_NODE_NUM && !used.has(num)) {
        used.add(num);
        return num;
      }
    }
  };
  const radioNum = nextNum();
  const radio: SimDevice = {
    num: radioNum,
    id: nodeIdFromNum(radioNum),
    shortName: 'HUB',
    longName: 'meshhub Simulated Radio',
    hwModel: Mesh.HardwareModel.PORTDUINO,
    position: onGrid(center.latitude, center.longitude, 420),
  };

  const places = shuffle(PLACES, random);
  // Exactly one node has no position (an indoor sensor without GPS).
  const withoutPosition = nodeCount > 1 ? hash32(seed, 0x6e6f706f) % nodeCount : -1;
  const nodes: SimNode[] = [];
  for (let index = 0; index < nodeCount; index++) {
    const num = nextNum();
    const profile = SENSOR_PROFILES[index % SENSOR_PROFILES.length]!;
    const place = places[index % places.length]!;
    const round = Math.floor(index / places.length);
    const distanceKm = 0.3 + 3.7 * Math.sqrt(random());
    const bearing = random() * 2 * Math.PI;
    const altitude = Math.round(380 + random() * 260);
    const latitude = center.latitude + (distanceKm / 111.32) * Math.cos(bearing);
    const longitude =
      center.longitude +
      (distanceKm / (111.32 * Math.cos((center.latitude * Math.PI) / 180))) * Math.sin(bearing);
    nodes.push({
      index,
      num,
      id: nodeIdFromNum(num),
      shortName: `${place.slice(0, 3).toUpperCase()}${(index + 1) % 10}`,
      longName: `${place} ${profile.label}${round > 0 ? ` ${round + 1}` : ''}`,
      hwModel: profile.hwModel,
      profile,
      position: index === withoutPosition ? undefined : onGrid(latitude, longitude, altitude),
      climateOffsetC: Math.round((random() * 3 - 1.5) * 10) / 10,
      snrBaseDb: Math.round(random() * 18 - 7),
      hopsAway: Math.floor(random() * 3),
    });
  }
  return { seed, center, radio, nodes };
}

function onGrid(latitude: number, longitude: number, altitude: number): SimPosition {
  return {
    latitude: Math.round(latitude * 1e7) / 1e7,
    longitude: Math.round(longitude * 1e7) / 1e7,
    altitude,
  };
}

function shuffle<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
