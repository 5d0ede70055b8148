/**
 * The whole hub, with and without `PLUGINS=audit`: the plugin's routes, actors, metrics and
 * source health appear only when it is on, through the hub's one HTTP server, `/health` and
 * `/metrics`; the core schema version does not depend on it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createHub, type Hub } from '../../../hub/main.js';
import { loadConfig } from '../../../hub/settings.js';
import { AUDIT_MIGRATIONS } from '../../../plugins/audit/store/schema.js';
import { loopbackListeners } from '../../../scripts/bench/lib/hub-env.js';
import { openDatabase } from '../../../src/store/database.js';
import { schemaVersion } from '../../../src/store/migrations.js';
import { FakeMicrosoft } from '../../fakes/microsoft/fake-microsoft.js';
import { directoryAudit } from '../../fakes/microsoft/fixtures.js';
import { hubStartRefusal, QUIET_ENV, radiolessHubEnv } from './helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: the test reads JSON bodies of many shapes
const json = async (url: string, init?: RequestInit): Promise<any> => (await fetch(url, init)).json();

interface RunningHub {
  hub: Hub;
  base: string;
  dataDir: string;
  stop(): Promise<void>;
}

const running: RunningHub[] = [];
afterEach(async () => {
  for (const h of running.splice(0)) await h.stop();
});

/** Like tests/helpers/hub.ts, but the plugin's settings reach it through HubOptions.env. */
async function startHub(
  env: Record<string, string>,
  dataDir = mkdtempSync(join(tmpdir(), 'meshhub-audit-hub-')),
): Promise<RunningHub> {
  const all = { ...radiolessHubEnv(dataDir), ...loopbackListeners(dataDir), ...env };
  const hub = await createHub(loadConfig(all), {
    log: pino({ level: 'silent' }),
    defaultMetrics: false,
    env: all,
  });
  await hub.start();
  const h: RunningHub = {
    hub,
    base: `http://127.0.0.1:${hub.http.port}`,
    dataDir,
    async stop() {
      await hub.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  running.push(h);
  return h;
}

describe('the hub with and without the audit plugin', () => {
  it('runs without it: no audit routes, actors or tables', async () => {
    const h = await startHub({});
    expect((await fetch(`${h.base}/api/events`)).status).toBe(404);
    expect((await fetch(`${h.base}/api/config/features`)).status).toBe(404);
    const health = await json(`${h.base}/health`);
    expect(health.actors.map((a: { name: string }) => a.name)).not.toContain('audit-collector');
    expect(await (await fetch(`${h.base}/metrics`)).text()).not.toContain('meshhub_audit_');
    const tables = h.hub.store.db
      .prepare("SELECT name FROM sqlite_master WHERE name LIKE 'audit_%'")
      .pluck()
      .all();
    expect(tables).toEqual([]);
  });

  it('runs with it: collects from the fake, serves search over the socket, reports health and metrics', async () => {
    const fake = new FakeMicrosoft();
    await fake.start();
    try {
      fake.directoryAudits.push(
        directoryAudit(1, Date.now() - 60_000),
        directoryAudit(2, Date.now() - 30_000),
      );
      const h = await startHub({ PLUGINS: 'audit', ...QUIET_ENV, ...fake.env(), AUDIT_SOURCES: 'directory' });
      const version = await json(`${h.base}/api/version`);
      const features = await json(`${h.base}/api/config/features`);
      expect(features.version).toBe(version.version);

      const queued = await fetch(`${h.base}/api/fetch`, { method: 'POST' });
      expect(queued.status).toBe(202);
      expect(await queued.json()).toEqual({ status: 'queued', sources: ['directory'] });
      let events: { data: Array<{ operation: string; actor: string }> } = { data: [] };
      for (let i = 0; i < 100 && events.data.length < 2; i++) {
        await new Promise((r) => setTimeout(r, 50));
        events = await json(`${h.base}/api/events`);
      }
      expect(events.data).toHaveLength(2);
      expect(events.data[0]).toMatchObject({
        operation: 'Add member to group',
        actor: 'bob@wingtiptoysonline.com',
      });

      const sourceHealth = await json(`${h.base}/api/source-health`);
      expect(sourceHealth).toMatchObject({
        collection: 'on',
        siem: null,
        data: [{ source: 'directory', status: 'ok', events_stored: 2 }],
      });
      expect(Date.parse(sourceHealth.data[0].last_attempt_time)).toBeGreaterThan(0);

      const health = await json(`${h.base}/health`);
      const names = health.actors.map((a: { name: string }) => a.name);
      expect(names).toEqual(expect.arrayContaining(['audit-collector', 'audit-maintenance']));
      const metrics = await (await fetch(`${h.base}/metrics`)).text();
      expect(metrics).toMatch(/meshhub_audit_records_total\{source="directory",outcome="stored"\} 2/);
      expect(metrics).toMatch(/meshhub_audit_source_up\{source="directory"\} 1/);
      expect(metrics).toMatch(
        /meshhub_http_request_duration_seconds_count\{method="GET",route="\/api\/events\/?",status="200"\}/,
      );
    } finally {
      await fake.stop();
    }
  });

  it('keeps the core schema version the same with and without the plugin', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'meshhub-audit-schema-'));
    const withPlugin = await startHub({ PLUGINS: 'audit', ...QUIET_ENV }, dir);
    const version = schemaVersion(withPlugin.hub.store.db);
    await withPlugin.hub.stop();
    running.splice(running.indexOf(withPlugin), 1);
    const db = openDatabase(join(dir, 'meshhub.sqlite'));
    try {
      expect(schemaVersion(db)).toBe(version);
      expect(
        db.prepare("SELECT max(version) FROM component_migrations WHERE component = 'audit'").pluck().get(),
      ).toBe(AUDIT_MIGRATIONS.at(-1)!.version);
    } finally {
      db.close();
    }
    const without = await startHub({}, dir);
    expect(schemaVersion(without.hub.store.db)).toBe(version);
  });

  it('refuses to start with invalid audit settings, naming each one', async () => {
    const refusal = await hubStartRefusal({ PLUGINS: 'audit', AUDIT_SOURCES: 'fax', RATE_LIMIT_WRITE: 'x' });
    expect(refusal.message).toMatch(/AUDIT_SOURCES: .*\n.*RATE_LIMIT_WRITE: /);
  });
});
