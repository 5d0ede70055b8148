/**
 * The whole hub for the alert tests: PLUGINS=audit over its real HTTP socket and MQTT broker on
 * loopback, events collected from the loopback Microsoft fake by a real fetch, users in the hub's
 * own store for MQTT logins.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Logger, pino } from 'pino';
import { createHub, type Hub } from '../../../hub/main.js';
import { loadConfig } from '../../../hub/settings.js';
import { loopbackHubEnv } from '../../../scripts/bench/lib/hub-env.js';
import { HubUserService } from '../../../src/auth/user-service.js';
import { FakeMicrosoft } from '../../fakes/microsoft/fake-microsoft.js';
import { mqttOf } from '../../helpers/hub.js';
import { QUIET_ENV } from './helpers.js';

export interface AlertsHub {
  hub: Hub;
  fake: FakeMicrosoft;
  base: string;
  mqttUrl: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read JSON bodies of many shapes
  call(path: string, init?: RequestInit): Promise<{ status: number; headers: Headers; body: any }>;
  /** POST /api/fetch, then waits until the directory's run has finished. */
  fetchNow(): Promise<void>;
  stop(): Promise<void>;
}

/** A rule on failed role assignments in Entra ID outside working hours (Monday to Friday, 08:00–18:00). */
export const AFTER_HOURS_RULE = {
  name: 'Failed role assignment after hours',
  severity: 'high',
  condition: {
    services: ['Entra ID'],
    operation: { contains: ['member to role', 'role assignment'] },
    result: 'failure',
    time: { days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '08:00', to: '18:00', when: 'outside' },
  },
};

export const PASSWORD = 'correct horse battery staple';

export async function startAlertsHub(
  env: Record<string, string> = {},
  users: Array<{ username: string; roles: string[] }> = [],
  /** The hub's log (silent when not given); a data directory to reuse (kept at stop). */
  options: { log?: Logger; dataDir?: string } = {},
): Promise<AlertsHub> {
  const log = options.log ?? pino({ level: 'silent' });
  const fake = new FakeMicrosoft();
  await fake.start();
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'meshhub-alerts-'));
  const all = loopbackHubEnv(dataDir, {
    PLUGINS: 'audit',
    ...QUIET_ENV,
    ...fake.env(),
    AUDIT_SOURCES: 'directory',
    ALERTS_ENABLED: 'true',
    // recentDay() reaches back up to 7 days and a test adds hours to it: past the default 7-day
    // first fetch on the same weekday later in the day (a Saturday's 11:00 event seen at 11:30).
    AUDIT_INITIAL_LOOKBACK: '9d',
    ...env,
  });
  const hub = await createHub(loadConfig(all), {
    log,
    defaultMetrics: false,
    env: all,
  });
  const repo = new HubUserService(hub.store.db);
  for (const u of users) await repo.add({ username: u.username, password: PASSWORD, roles: u.roles });
  await hub.start();
  const base = `http://127.0.0.1:${hub.http.port}`;
  const call: AlertsHub['call'] = async (path, init) => {
    const res = await fetch(`${base}${path}`, init);
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
  let runs = 0;
  return {
    hub,
    fake,
    base,
    mqttUrl: `mqtt://127.0.0.1:${mqttOf(hub).port}`,
    call,
    async fetchNow() {
      runs++;
      const before = fake.requestsTo('graph', 'directoryAudits').length;
      const queued = await call('/api/fetch', { method: 'POST' });
      if (queued.status !== 202) throw new Error(`fetch not queued: ${queued.status}`);
      // Done when the fake was asked and source health says the run ended.
      for (let i = 0; i < 400; i++) {
        const health = await call('/api/source-health');
        const row = health.body.data[0];
        if (
          fake.requestsTo('graph', 'directoryAudits').length > before &&
          row.status !== 'running' &&
          row.status !== 'pending'
        ) {
          if (row.status !== 'ok') throw new Error(`fetch ${runs} ended ${row.status}: ${row.error}`);
          return;
        }
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error('the fetch did not finish');
    },
    async stop() {
      await hub.stop();
      await fake.stop();
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A JSON request (the same as `jsonInit`). */
export { jsonInit as jsonBody } from './helpers.js';

/** The start of the most recent UTC day (before today) that is `weekday` (0 Sunday … 6 Saturday). */
export function recentDay(weekday: number, now = Date.now()): number {
  const today = Date.UTC(
    new Date(now).getUTCFullYear(),
    new Date(now).getUTCMonth(),
    new Date(now).getUTCDate(),
  );
  for (let back = 1; back <= 7; back++) {
    const day = today - back * 86_400_000;
    if (new Date(day).getUTCDay() === weekday) return day;
  }
  throw new Error('unreachable');
}
