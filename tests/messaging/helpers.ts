/**
 * Messaging test helpers: subscribers with real tokens from POST /api/v1/auth/token, API calls
 * over real HTTP (or to an app in process), and a MeshSimulator the test controls (RADIO=tcp against it) so a test can
 * cut the radio link, count what reached the radio, and inject packets as the mesh would.
 */
import { create } from '@bufbuild/protobuf';
import { Mesh, Portnums } from '@meshtastic/protobufs';
import { afterEach } from 'vitest';
import { HubUserService } from '../../src/auth/user-service.js';
import {
  createMessagingResponder,
  type MessagingResponderOptions,
  routingReport,
} from '../../src/mesh/simulator/messaging-responder.js';
import { createSimNetwork, type SimNetwork } from '../../src/mesh/simulator/nodes.js';
import type { PacketResponder, SimClient } from '../../src/mesh/simulator/responder.js';
import type { MeshSimulator } from '../../src/mesh/simulator/simulator.js';
import { SubscriptionRepository } from '../../src/messaging/subscription-repository.js';
import type { TestHub } from '../helpers/hub.js';
import { waitFor } from '../helpers/hub.js';
import { testSimulator } from '../helpers/simulator.js';

export const PASSWORD = 'field-radio-42';

/**
 * The list a test file's tests push their stops onto: after each test they run, the last pushed
 * first, and the list is empty again.
 */
export function stopsAfterEach(): Array<() => Promise<void>> {
  const stops: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const fn of stops.splice(0).reverse()) await fn();
  });
  return stops;
}

/** Settings that make the simulated mesh answer fast and keep pacing out of the way. */
export const FAST_MESSAGING: Record<string, string> = {
  SIM_BACKFILL: '0s',
  SIM_FAILURE_PERCENT: '0',
  SIM_ACK_DELAY_SCALE: '0.1',
  MESSAGE_AIRTIME_PERCENT: '100',
  MESSAGE_RETRY_DELAY: '0s',
  MESSAGE_RATE_PER_SUBSCRIBER: '1000/1m',
  MESSAGE_RATE_PER_NODE: '1000/1m',
};

// biome-ignore lint/suspicious/noExplicitAny: tests read bodies of many shapes and assert on them
export type Json = any;

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: Json;
}

/** Where `call` sends a request: a base URL (over real HTTP), or an app's `request` (a Hono app). */
export type ApiTarget = string | { request(path: string, init: RequestInit): Response | Promise<Response> };

export async function call(
  target: ApiTarget,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  const init: RequestInit = { method, headers, ...(body === undefined ? {} : { body }) };
  const res =
    typeof target === 'string' ? await fetch(`${target}${path}`, init) : await target.request(path, init);
  const text = await res.text();
  let parsed: Json;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

export async function tokenFor(baseUrl: string, username: string, password = PASSWORD): Promise<string> {
  const res = await call(baseUrl, 'POST', '/api/v1/auth/token', { body: { username, password } });
  if (res.status !== 200) throw new Error(`token for ${username}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.access_token as string;
}

/** A user with a subscription (all nodes, some nodes or none), and a token from the token endpoint. */
export async function subscriber(
  t: TestHub,
  username: string,
  options: { nodes?: 'all' | string[] | 'none'; roles?: string[]; expiresAt?: number } = {},
): Promise<string> {
  const db = t.hub.store.db;
  await new HubUserService(db).add({ username, password: PASSWORD, roles: options.roles ?? ['subscriber'] });
  const nodes = options.nodes ?? 'all';
  if (nodes !== 'none') {
    new SubscriptionRepository(db).create({
      subscriber: username,
      nodes,
      source: 'test',
      expiresAt: options.expiresAt ?? null,
    });
  }
  return tokenFor(t.baseUrl, username);
}

export async function knownNodes(t: TestHub, count: number): Promise<string[]> {
  return waitFor(
    async () => {
      const r = await call(t.baseUrl, 'GET', '/api/v1/nodes');
      const myNum = t.hub.bus.last('radio.status')!.myNodeNum;
      const ids = (r.body.data as Array<{ node_id: string }>)
        .map((n) => n.node_id)
        .filter((id) => myNum === undefined || id !== `!${myNum.toString(16).padStart(8, '0')}`);
      return ids.length >= count && myNum !== undefined ? ids : undefined;
    },
    10_000,
    `${count} known nodes`,
  );
}

export function send(
  t: TestHub,
  token: string,
  target: string,
  text: string,
  headers: Record<string, string> = {},
) {
  return call(t.baseUrl, 'POST', '/api/v1/messages', {
    token,
    body: { target_node_id: target, text },
    headers,
  });
}

export async function waitForStatus(
  t: TestHub,
  token: string,
  id: string,
  status: string,
  timeoutMs = 15_000,
) {
  return waitFor(
    async () => {
      const r = await call(t.baseUrl, 'GET', `/api/v1/messages/${id}`, { token });
      return r.body?.status === status ? r.body : undefined;
    },
    timeoutMs,
    `message ${id} to become ${status}`,
  );
}

/** Packets the hub handed to the simulated radio, and the session to inject packets through. */
export class RecordingResponder implements PacketResponder {
  readonly packets: Mesh.MeshPacket[] = [];
  client: SimClient | undefined;
  constructor(private readonly inner: PacketResponder) {}
  onPacket(packet: Mesh.MeshPacket, client: SimClient) {
    this.packets.push(packet);
    this.client = client;
    return this.inner.onPacket(packet, client);
  }
  get texts(): Mesh.MeshPacket[] {
    return this.packets.filter(
      (p) =>
        p.payloadVariant.case === 'decoded' &&
        p.payloadVariant.value.portnum === Portnums.PortNum.TEXT_MESSAGE_APP,
    );
  }
}

export interface ControlledSim {
  sim: MeshSimulator;
  port: number;
  network: SimNetwork;
  recorder: RecordingResponder;
  /** Stops the simulator: the hub's radio link drops. */
  cut(): Promise<void>;
  /** Starts it again on the same port: the hub reconnects. */
  restore(): Promise<void>;
  stop(): Promise<void>;
}

const SIM_CENTER = { latitude: 47.3769, longitude: 8.5417 };

export async function startControlledSim(
  options: MessagingResponderOptions & { silent?: boolean; seed?: number } = {},
): Promise<ControlledSim> {
  const seed = options.seed ?? 7;
  const inner: PacketResponder = options.silent ? { onPacket() {} } : createMessagingResponder(options);
  const recorder = new RecordingResponder(inner);
  const make = (port: number) =>
    testSimulator({
      port,
      seed,
      telemetryIntervalMs: 3_600_000,
      responder: recorder,
    });
  let sim = make(0);
  const { port } = await sim.start();
  const controlled: ControlledSim = {
    sim,
    port,
    network: createSimNetwork({ seed, nodeCount: 6, center: SIM_CENTER }),
    recorder,
    async cut() {
      await sim.stop();
    },
    async restore() {
      sim = make(port);
      controlled.sim = sim;
      await sim.start();
    },
    async stop() {
      await sim.stop();
    },
  };
  return controlled;
}

/** A TEXT_MESSAGE_APP packet from `from` to `to`, as the radio would hear it. */
export function textFrom(from: number, to: number, text: string): Mesh.MeshPacket {
  return create(Mesh.MeshPacketSchema, {
    from,
    to,
    channel: 0,
    wantAck: true,
    hopStart: 3,
    hopLimit: 3,
    payloadVariant: {
      case: 'decoded',
      value: { portnum: Portnums.PortNum.TEXT_MESSAGE_APP, payload: new TextEncoder().encode(text) },
    },
  });
}

export function routingFrom(
  from: number,
  to: number,
  requestId: number,
  reason: Mesh.Routing_Error,
): Mesh.MeshPacket {
  return create(Mesh.MeshPacketSchema, { from, to, payloadVariant: routingReport(requestId, reason) });
}
