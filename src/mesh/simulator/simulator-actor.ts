import type { HubBus } from '../../domain/events.js';
import { Actor } from '../../kernel/actor.js';
import { bindFailure } from '../../kernel/startup-failure.js';
import type { Logger } from '../../log.js';
import { createMessagingResponder } from './messaging-responder.js';
import { hash32, unitHash } from './random.js';
import { MeshSimulator, type MeshSimulatorOptions } from './simulator.js';
import { withTopology } from './topology-responder.js';

/** The simulated mesh without SIM_SEED, SIM_CENTER or a site id: seed 1 around Zürich. */
export const DEFAULT_SIM_SEED = 1;
export const DEFAULT_SIM_CENTER = { latitude: 47.3769, longitude: 8.5417 };

/** The SIM_* settings (hub/settings.ts). */
export interface SimulatorSettings {
  SIM_HOST: string;
  SIM_PORT: number;
  SIM_NODES: number;
  SIM_CENTER?: MeshSimulatorOptions['center'] | undefined;
  SIM_SEED?: number | undefined;
  SIM_TELEMETRY_SECONDS: number;
  SIM_BACKFILL: number;
  SIM_FAILURE_PERCENT: number;
  SIM_ACK_DELAY_SCALE: number;
  SIM_AWAY_MINUTES?: number | undefined;
  SIM_RENUMBER_AFTER_MINUTES?: number | undefined;
  SIM_REBOOT_MINUTES?: number | undefined;
}

/**
 * The seed and centre of a site's simulated mesh when SIM_SEED / SIM_CENTER are not set: drawn
 * from the site id (SYNC_SITE_ID), so two sites on one machine simulate different nodes (their
 * own node numbers and names) at different places, up to ~20 km from the default centre.
 */
export function simulatedMeshOfSite(siteId: string): {
  seed: number;
  center: MeshSimulatorOptions['center'];
} {
  const keys = [...siteId].map((c) => c.codePointAt(0)!);
  const seed = (hash32(0x73697465, ...keys) % 2_147_483_646) + 2;
  const shift = (k: number) => unitHash(seed, k) - 0.5;
  return {
    seed,
    center: {
      latitude: Number((DEFAULT_SIM_CENTER.latitude + 0.36 * shift(1)).toFixed(4)),
      longitude: Number((DEFAULT_SIM_CENTER.longitude + 0.52 * shift(2)).toFixed(4)),
    },
  };
}

/**
 * The simulator's options from the SIM_* settings: one place for the hub's built-in simulator and
 * `meshhub sim`. Without SIM_SEED / SIM_CENTER, a site (`siteId`, SYNC_SITE_ID) gets its own
 * (simulatedMeshOfSite); without a site either, seed 1 around Zürich.
 */
export function simulatorOptionsFrom(
  config: SimulatorSettings,
  siteId?: string | undefined,
): Omit<MeshSimulatorOptions, 'log'> {
  const ofSite = siteId ? simulatedMeshOfSite(siteId) : undefined;
  return {
    host: config.SIM_HOST,
    port: config.SIM_PORT,
    nodeCount: config.SIM_NODES,
    center: config.SIM_CENTER ?? ofSite?.center ?? DEFAULT_SIM_CENTER,
    seed: config.SIM_SEED ?? ofSite?.seed ?? DEFAULT_SIM_SEED,
    telemetryIntervalMs: config.SIM_TELEMETRY_SECONDS * 1000,
    backfillMs: config.SIM_BACKFILL,
    ...(config.SIM_AWAY_MINUTES ? { awayMinutes: config.SIM_AWAY_MINUTES } : {}),
    ...(config.SIM_REBOOT_MINUTES ? { rebootMinutes: config.SIM_REBOOT_MINUTES } : {}),
    ...(config.SIM_RENUMBER_AFTER_MINUTES
      ? { renumberAfterMs: config.SIM_RENUMBER_AFTER_MINUTES * 60_000 }
      : {}),
    responder: withTopology(
      createMessagingResponder({
        failurePercent: config.SIM_FAILURE_PERCENT,
        delayScale: config.SIM_ACK_DELAY_SCALE,
      }),
      { delayScale: config.SIM_ACK_DELAY_SCALE },
    ),
  };
}

/**
 * Runs the built-in simulator when no radio is attached: a virtual device on loopback TCP that
 * the radio link reaches like any real radio, so the hub always runs its real radio path.
 * Listens on SIM_HOST:SIM_PORT so official apps can connect to it too; when that port is taken
 * (say, by a separate `meshhub sim`) the start fails naming SIM_PORT, as for every port. Where it
 * listens is announced on the retained `simulator.listening`, which the radio actor reads.
 */
export class SimulatorActor extends Actor {
  readonly name = 'simulator';
  private sim: MeshSimulator | undefined;
  private bound: { host: string; port: number } | undefined;

  constructor(
    private readonly options: Omit<MeshSimulatorOptions, 'log'>,
    private readonly bus: HubBus,
    private readonly log: Logger,
  ) {
    super();
  }

  get address(): { host: string; port: number } {
    if (!this.bound) throw new Error('the simulator is not running');
    return this.bound;
  }

  async start(): Promise<void> {
    const log = this.log.child({ component: 'simulator' });
    try {
      this.sim = new MeshSimulator({ ...this.options, log });
      this.bound = await this.sim.start();
    } catch (error) {
      // A taken port fails the start, like every port of the hub (README "Configuration").
      throw bindFailure(error, {
        portSetting: 'SIM_PORT',
        port: this.options.port,
        host: this.options.host,
        hostSetting: 'SIM_HOST',
      });
    }
    const { seed, center, nodeCount } = this.options;
    log.info({ ...this.bound, nodes: nodeCount, seed, center }, 'simulator listening');
    this.bus.emit('simulator.listening', this.bound);
  }

  override describe(): Record<string, unknown> {
    return this.bound ? { address: `${this.bound.host}:${this.bound.port}` } : {};
  }

  async stop(): Promise<void> {
    await this.sim?.stop();
    this.sim = undefined;
    this.bound = undefined;
  }
}
