/**
 * A raw-socket Meshtastic API client (our framer, real protobufs) and a hub on the simulator
 * with its mesh API on a free loopback port.
 */
import { connect, type Socket } from 'node:net';
import { create, fromBinary, type MessageInitShape, toBinary } from '@bufbuild/protobuf';
import { Mesh } from '@meshtastic/protobufs';
import { encodeFrame, StreamFramer } from '../../src/mesh/framing.js';
import type { MeshApiActor } from '../../src/mesh-api/mesh-api-actor.js';
import { startTestHub, type TestHub, waitFor } from '../helpers/hub.js';

export const MESH_API_ENV = {
  MESH_API_PORT: '0',
  SIM_BACKFILL: '0s',
  SIM_TELEMETRY_SECONDS: '1',
  SIM_FAILURE_PERCENT: '0',
  SIM_ACK_DELAY_SCALE: '0.02',
};

export async function startMeshApiHub(
  env: Record<string, string> = {},
): Promise<{ t: TestHub; api: MeshApiActor; port: number }> {
  const t = await startTestHub({ ...MESH_API_ENV, ...env });
  const api = t.hub.actor<MeshApiActor>('mesh-api');
  if (!api?.address) throw new Error('the mesh API is not listening');
  await waitFor(() => t.hub.bus.last('radio.status')?.state === 'connected', 10_000, 'radio connected');
  return { t, api, port: api.address.port };
}

export class RawClient {
  readonly received: Mesh.FromRadio[] = [];
  private readonly framer = new StreamFramer();
  closed = false;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      for (const event of this.framer.push(chunk)) {
        if (event.kind === 'frame') this.received.push(fromBinary(Mesh.FromRadioSchema, event.payload));
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
    });
  }

  static connect(port: number): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port }, () => resolve(new RawClient(socket)));
      socket.once('error', reject);
    });
  }

  send(message: MessageInitShape<typeof Mesh.ToRadioSchema>): void {
    this.socket.write(encodeFrame(toBinary(Mesh.ToRadioSchema, create(Mesh.ToRadioSchema, message))));
  }

  writeRaw(bytes: Uint8Array): void {
    this.socket.write(bytes);
  }

  /** Asks for the config and waits for its config_complete_id; returns the handshake messages. */
  async handshake(nonce: number): Promise<Mesh.FromRadio[]> {
    const start = this.received.length;
    this.send({ payloadVariant: { case: 'wantConfigId', value: nonce } });
    await waitFor(
      () =>
        this.received
          .slice(start)
          .some((m) => m.payloadVariant.case === 'configCompleteId' && m.payloadVariant.value === nonce),
      10_000,
      `config_complete_id ${nonce}`,
    );
    const all = this.received.slice(start);
    return all.slice(0, all.findIndex((m) => m.payloadVariant.case === 'configCompleteId') + 1);
  }

  packets(): Mesh.MeshPacket[] {
    return this.received.flatMap((m) => (m.payloadVariant.case === 'packet' ? [m.payloadVariant.value] : []));
  }

  close(): void {
    this.socket.destroy();
  }
}
