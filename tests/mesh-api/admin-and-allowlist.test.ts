/**
 * The mesh API server alone (real TCP, a RadioMirror, a recording paced send): admin writes pass
 * with MESH_API_ADMIN=true, and clients outside MESH_API_ALLOW are turned away.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { Admin, type Mesh, Portnums } from '@meshtastic/protobufs';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../hub/settings.js';
import type { HubBus, HubEvents, HubRequests } from '../../src/domain/events.js';
import { Bus } from '../../src/kernel/bus.js';
import { MeshApiActor, meshApiMetrics } from '../../src/mesh-api/mesh-api-actor.js';
import { RadioMirror } from '../../src/mesh-api/radio-mirror.js';
import { waitFor } from '../helpers/hub.js';
import { RawClient } from './helpers.js';

let actor: MeshApiActor | undefined;
afterEach(async () => {
  await actor?.stop();
  actor = undefined;
});

async function serve(
  env: Record<string, string>,
  sent: Mesh.MeshPacket[],
): Promise<{ actor: MeshApiActor; registry: Registry }> {
  const config = loadConfig({ MESH_API_PORT: '0', ...env });
  const bus: HubBus = new Bus<HubEvents, HubRequests>({ retained: ['radio.status', 'simulator.listening'] });
  const registry = new Registry();
  const mirror = new RadioMirror();
  let a: MeshApiActor | undefined;
  a = new MeshApiActor({
    settings: config,
    bus,
    log: pino({ level: 'silent' }),
    mirror,
    nodes: () => [],
    metrics: meshApiMetrics(registry, () => a?.clients ?? []),
    send: async (packet) => {
      sent.push(packet);
    },
  });
  await a.start();
  actor = a;
  return { actor: a, registry };
}

const setOwner = toBinary(
  Admin.AdminMessageSchema,
  create(Admin.AdminMessageSchema, { payloadVariant: { case: 'setOwner', value: { longName: 'renamed' } } }),
);

describe('mesh API server', () => {
  it('passes admin writes on when MESH_API_ADMIN=true', async () => {
    const sent: Mesh.MeshPacket[] = [];
    const { actor } = await serve({ MESH_API_ADMIN: 'true' }, sent);
    const client = await RawClient.connect(actor.address!.port);
    await client.handshake(1);
    client.send({
      payloadVariant: {
        case: 'packet',
        value: {
          to: 1,
          id: 77,
          payloadVariant: {
            case: 'decoded',
            value: { portnum: Portnums.PortNum.ADMIN_APP, payload: setOwner },
          },
        },
      },
    });
    await waitFor(() => sent.length === 1);
    expect(sent[0]!.id).toBe(77);
    client.close();
  });

  it('turns away a client whose address is not in MESH_API_ALLOW', async () => {
    const { actor, registry } = await serve({ MESH_API_ALLOW: '192.0.2.0/24' }, []);
    const client = await RawClient.connect(actor.address!.port);
    await waitFor(() => client.closed, 5_000, 'the connection closed');
    expect(actor.clients).toHaveLength(0);
    expect(await registry.getSingleMetricAsString('meshhub_mesh_api_disconnects_total')).toMatch(
      /reason="not_allowed"} 1/,
    );
  });
});
