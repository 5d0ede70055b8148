/**
 * Wiring of the mesh API, loaded by its module (module.ts) only when MESH_API is on: the actor,
 * its metrics, and its paced send through the message gateway's airtime queue.
 */
import { toBinary } from '@bufbuild/protobuf';
import { Mesh } from '@meshtastic/protobufs';
import type { Registry } from 'prom-client';
import type { HubBus } from '../domain/events.js';
import type { Logger } from '../log.js';
import type { Database } from '../store/database.js';
import { NodeRepository } from '../store/nodes-repository.js';
import { MeshApiActor, meshApiMetrics } from './mesh-api-actor.js';
import type { RadioMirror } from './radio-mirror.js';
import type { MeshApiSettings } from './settings.js';

export { MeshApiActor } from './mesh-api-actor.js';
export { RadioMirror } from './radio-mirror.js';
export { type MeshApiSettings, meshApiSettings } from './settings.js';

/** The hub's one airtime-paced send queue (the bus request `messaging.sendPaced`). */
export interface AirtimeQueue {
  sendPaced(payloadBytes: number, transmit: () => Promise<void>): Promise<void>;
}

export function createMeshApiActor(deps: {
  settings: MeshApiSettings;
  bus: HubBus;
  log: Logger;
  db: Database;
  registry: Registry;
  mirror: RadioMirror;
  airtime: AirtimeQueue;
}): MeshApiActor {
  const { mirror, airtime } = deps;
  const nodes = new NodeRepository(deps.db);
  let actor: MeshApiActor | undefined;
  const metrics = meshApiMetrics(deps.registry, () => actor?.clients ?? []);
  actor = new MeshApiActor({
    settings: deps.settings,
    bus: deps.bus,
    log: deps.log.child({ component: 'mesh-api' }),
    mirror,
    nodes: () => nodes.list(),
    metrics,
    send: (packet) => {
      const data = packet.payloadVariant.case === 'decoded' ? packet.payloadVariant.value : undefined;
      const bytes = data ? toBinary(Mesh.DataSchema, data).length : 0;
      return airtime.sendPaced(bytes, () => mirror.transmit(packet));
    },
  });
  return actor;
}
