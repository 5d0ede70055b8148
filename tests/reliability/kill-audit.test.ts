/**
 * Issue 17: SIGKILL during audit collection. The built hub (child process, PLUGINS=audit)
 * collects from the loopback Microsoft fake (tests/fakes/microsoft: Entra token endpoint, Graph
 * directory audits paged by @odata.nextLink, the Management Activity API's content blobs), small
 * pages so a run takes many requests. A seeded script starts the hub (it fetches on start and
 * every few seconds), SIGKILLs it at a random moment, publishes a few new events, and starts it
 * again; ROUNDS times. Then it lets the hub finish.
 *
 * Exact counts at the end: every event published is stored once (per source, the stored keys
 * are exactly the published ids), none lost to a watermark that moved past an uncommitted page.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeMicrosoft } from '../fakes/microsoft/fake-microsoft.js';
import { directoryAudit, managementRecord } from '../fakes/microsoft/fixtures.js';
import { waitFor } from '../helpers/hub.js';
import { HubProcess, killScenario, pause, QUIET_SIM, removeDir, scratchDir } from './helpers/hub-process.js';

const { seed: SEED, rounds: ROUNDS, between } = killScenario('kill during audit collection');
const MIN = 60_000;

const fake = new FakeMicrosoft();
fake.pageSize = 10;
fake.contentPageSize = 5;
const dataDir = scratchDir('audit');
let hub: HubProcess;
const directoryIds = new Set<string>();
const exchangeIds = new Set<string>();
let n = 0;

function publish(directory: number, blobs: number): void {
  const now = Date.now();
  for (let i = 0; i < directory; i++, n++) {
    // Recent events (within the plugin's overlap, AUDIT_OVERLAP 1 h), as Graph shows them.
    const event = directoryAudit(n, now - 10 * MIN + i * 100);
    fake.directoryAudits.push(event);
    directoryIds.add(event.id as string);
  }
  for (let b = 0; b < blobs; b++) {
    const records = Array.from({ length: 5 }, () => managementRecord('Audit.Exchange', n++, now - 30 * MIN));
    for (const r of records) exchangeIds.add(r.Id as string);
    fake.publish('Audit.Exchange', records, now - 20 * MIN);
  }
}

function stored(): Map<string, string[]> {
  const db = new Database(join(dataDir, 'meshhub.sqlite'), { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare('SELECT source, source_key FROM audit_events').all() as {
      source: string;
      source_key: string;
    }[];
    const by = new Map<string, string[]>();
    for (const r of rows) by.set(r.source, [...(by.get(r.source) ?? []), r.source_key]);
    return by;
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  await fake.start();
  publish(2_000, 60);
  hub = new HubProcess({
    dataDir,
    env: {
      ...QUIET_SIM,
      PLUGINS: 'audit',
      ...fake.env(),
      AUDIT_ALLOW_PRIVATE_NETWORK: 'true',
      AUDIT_SOURCES: 'directory,exchange',
      AUDIT_FETCH_ON_START: 'true',
      AUDIT_FETCH_CRON: '*/2 * * * * *',
      AUDIT_MAINTENANCE_CRON: '0 0 1 1 *',
      AUDIT_BACKOFF_BASE_MS: '5',
      AUDIT_BACKOFF_MAX_MS: '20',
      AUDIT_INITIAL_LOOKBACK: '1d',
    },
  });
});

afterAll(async () => {
  await hub?.kill();
  await fake.stop();
  removeDir(dataDir);
});

describe('SIGKILL during audit collection (the built hub as a child process, the Microsoft fake)', () => {
  it(`stores every event exactly once (seed ${SEED}, ${ROUNDS} kills)`, async () => {
    const script: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await hub.start();
      const killAfter = between(30, 900);
      await pause(killAfter);
      await hub.kill();
      const have = [...stored().values()].reduce((s, k) => s + k.length, 0);
      script.push(`${killAfter}ms/${have}`);
      publish(between(50, 300), between(0, 10));
    }
    await hub.start();
    const final = await waitFor(
      () => {
        const s = stored();
        return (s.get('directory')?.length ?? 0) >= directoryIds.size &&
          (s.get('exchange')?.length ?? 0) >= exchangeIds.size
          ? s
          : undefined;
      },
      120_000,
      () =>
        `every event stored (have ${JSON.stringify([...stored()].map(([k, v]) => [k, v.length]))} of ${directoryIds.size} + ${exchangeIds.size})\n${hub.tail()}`,
    );
    // Exactly the published events, each once.
    const directory = final.get('directory')!;
    const exchange = final.get('exchange')!;
    expect(new Set(directory).size).toBe(directory.length);
    expect(new Set(exchange).size).toBe(exchange.length);
    expect(directory.length).toBe(directoryIds.size);
    expect(exchange.length).toBe(exchangeIds.size);
    expect(directory.filter((k) => !directoryIds.has(k))).toEqual([]);
    expect(exchange.filter((k) => !exchangeIds.has(k))).toEqual([]);
    console.log(
      `[reliability] kill during audit collection: ${ROUNDS} kills (${script.join(', ')} = ms after start / events stored at the kill); ` +
        `${directoryIds.size} directory events and ${exchangeIds.size} Exchange records published, each stored exactly once; ` +
        `${fake.requests.length} requests to the fake`,
    );
  }, 600_000);
});
