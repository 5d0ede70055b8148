import { pino } from 'pino';
import { MeshSimulator, type MeshSimulatorOptions } from '../../src/mesh/simulator/simulator.js';

/** Where the tests' simulated meshes are: Zürich. */
export const TEST_MESH_CENTER = { latitude: 47.3769, longitude: 8.5417 };

/**
 * A simulated mesh for tests: six nodes around Zürich on a free loopback port, no history
 * replayed, logging nothing. `options` gives the seed and telemetry interval, and may change any
 * of the rest.
 */
export function testSimulator(
  options: Pick<MeshSimulatorOptions, 'seed' | 'telemetryIntervalMs'> & Partial<MeshSimulatorOptions>,
): MeshSimulator {
  return new MeshSimulator({
    host: '127.0.0.1',
    port: 0,
    nodeCount: 6,
    center: TEST_MESH_CENTER,
    backfillMs: 0,
    log: pino({ level: 'silent' }),
    ...options,
  });
}
