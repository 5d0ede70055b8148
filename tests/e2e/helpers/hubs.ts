/** Hubs for the browser tests: the real hub on the simulator, with a local tile file so no request leaves the machine. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FakeMicrosoft } from '../../fakes/microsoft/fake-microsoft.js';
import { startTestHub, type TestHub, waitFor } from '../../helpers/hub.js';
import { QUIET_ENV } from '../../plugins/audit/helpers.js';
import { tilesAround, writeMbtiles } from '../../ui-server/fixtures.js';

export const SIM_CENTER = { latitude: 47.3769, longitude: 8.5417 };

let tileFile: string | undefined;

/** An MBTiles file covering the simulated mesh up to zoom 12 (the map upscales beyond). */
export function localTiles(): string {
  if (!tileFile) {
    tileFile = join(mkdtempSync(join(tmpdir(), 'meshhub-e2e-tiles-')), 'site.mbtiles');
    writeMbtiles(tileFile, tilesAround(SIM_CENTER.latitude, SIM_CENTER.longitude, 12), {
      name: 'e2e',
      format: 'png',
      attribution: 'Test tiles',
      minzoom: '0',
      maxzoom: '12',
    });
  }
  return tileFile;
}

export function startUiHub(env: Record<string, string> = {}): Promise<TestHub> {
  return startTestHub({ SIM_BACKFILL: '24h', MAP_TILES: localTiles(), ...env });
}

export interface ApiNode {
  node_id: string;
  short_name?: string;
  long_name?: string;
  latitude?: number;
  longitude?: number;
}

export async function apiJson<T>(t: TestHub, path: string): Promise<T> {
  const res = await fetch(`${t.baseUrl}${path}`);
  if (!res.ok) throw new Error(`${path}: ${res.status}`);
  return (await res.json()) as T;
}

/** The simulator's six nodes and the hub's own radio, once the hub knows all their names. */
export function simulatedNodes(t: TestHub): Promise<ApiNode[]> {
  return waitFor(
    async () => {
      const { data } = await apiJson<{ data: ApiNode[] }>(t, '/api/v1/nodes');
      return data.length >= 7 && data.every((n) => n.long_name) ? data : undefined;
    },
    15_000,
    'the simulated nodes',
  );
}

/** A UI hub with PLUGINS=audit, quiet (no fetch at start, no cron), collecting from `fake`. */
export function startAuditUiHub(fake: FakeMicrosoft, env: Record<string, string> = {}): Promise<TestHub> {
  return startUiHub({ PLUGINS: 'audit', ...QUIET_ENV, ...fake.env(), ...env });
}
