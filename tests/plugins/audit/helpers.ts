/**
 * Test scaffolding for the audit plugin: the plugin built through its real `create()` against a
 * SQLite file, its routes mounted on the hub's real HTTP app (request ids, problem details). The
 * local identity provider is in idp.ts.
 */

import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';
import { pino } from 'pino';
import type { Registry } from 'prom-client';
import { afterEach } from 'vitest';
import { createHub } from '../../../hub/main.js';
import { standaloneApp, standaloneModuleHost } from '../../../hub/module-host.js';
import { loadConfig } from '../../../hub/settings.js';
import type { AuditCollectorActor } from '../../../plugins/audit/collector-actor.js';
import { auditModule } from '../../../plugins/audit/index.js';
import type { AuditMaintenanceActor } from '../../../plugins/audit/maintenance-actor.js';
import { normalizeRecord } from '../../../plugins/audit/normalize.js';
import { AuditConfigError, auditSettings, loadAuditConfig } from '../../../plugins/audit/settings.js';
import type { SourceName } from '../../../plugins/audit/sources.js';
import { type AuditRepositories, openAuditRepositories } from '../../../plugins/audit/store/audit-store.js';
import { AUDIT_COMPONENT, AUDIT_MIGRATIONS } from '../../../plugins/audit/store/schema.js';
import type { LocalIssuer } from '../../../src/auth/local-issuer.js';
import { HubUserService } from '../../../src/auth/user-service.js';
import { sliceKeys } from '../../../src/config/load.js';
import type { HttpMethod } from '../../../src/http/openapi.js';
import type { Actor } from '../../../src/kernel/actor.js';
import { createLogger } from '../../../src/log.js';
import { migrateComponent } from '../../../src/store/component-migrations.js';
import { closeDatabase, type Database, openDatabase } from '../../../src/store/database.js';
import { NodeRepository } from '../../../src/store/nodes-repository.js';
import { CLI } from '../../helpers/cli.js';
import { configProblems } from '../../helpers/config.js';
import type { Conformance } from '../../http/openapi-conformance.js';
import { idpAuthEnv, type LocalIdp, startLocalIdp } from './idp.js';

export const silent = pino({ level: 'silent' });

/** Settings that keep tests quick and quiet: no fetch at start, no cron firing, short backoffs. */
export const QUIET_ENV: Record<string, string> = {
  AUDIT_FETCH_ON_START: 'false',
  AUDIT_FETCH_CRON: '0 0 1 1 *',
  AUDIT_MAINTENANCE_CRON: '0 0 1 1 *',
  AUDIT_BACKOFF_BASE_MS: '5',
  AUDIT_BACKOFF_MAX_MS: '20',
  AUDIT_MAX_RETRY_AFTER: '2s',
};

const UNLIMITED = '100000/1m';
/** Rate limits no test of something else reaches (those tests make many requests). */
export const NO_RATE_LIMITS: Record<string, string> = {
  RATE_LIMIT_DEFAULT: UNLIMITED,
  RATE_LIMIT_WRITE: UNLIMITED,
  RATE_LIMIT_ASK: UNLIMITED,
  RATE_LIMIT_FETCH: UNLIMITED,
};

/** One export at a time (so a second shows as a 429), the default rate limit out of the way. */
const ONE_EXPORT_AT_A_TIME: Record<string, string> = {
  RATE_LIMIT_DEFAULT: UNLIMITED,
  AUDIT_EXPORT_MAX_CONCURRENT: '1',
};

/** The AI settings for a model behind `baseUrl` (a loopback fake, hence the private-network opt-in). */
export const llmEnv = (baseUrl: string, model = 'test-model'): Record<string, string> => ({
  AI_FEATURES_ENABLED: 'true',
  LLM_BASE_URL: baseUrl,
  LLM_MODEL: model,
  LLM_ALLOW_PRIVATE_NETWORK: 'true',
});

/** The problems loadAuditConfig reports for `env`; fails the test unless it throws an AuditConfigError. */
export function auditConfigProblems(env: Record<string, string>): string[] {
  return configProblems(() => {
    try {
      return loadAuditConfig(env);
    } catch (error) {
      if (!(error instanceof AuditConfigError)) throw new Error(`expected an AuditConfigError, got ${error}`);
      throw error;
    }
  });
}

/** A whole hub's settings without a radio or logs: its data in `dataDir`, HTTP on a free port. */
export const radiolessHubEnv = (dataDir: string): Record<string, string> => ({
  DATA_DIR: dataDir,
  HTTP_PORT: '0',
  MESH_API_PORT: '0',
  RADIO: 'none',
  LOG_LEVEL: 'silent',
});

/** What createHub throws for a whole hub of radiolessHubEnv (in a temp dir), then `env`; fails if it starts. */
export async function hubStartRefusal(
  env: Record<string, string>,
  log: pino.Logger = silent,
): Promise<Error> {
  const dataDir = mkdtempSync(join(tmpdir(), 'meshhub-audit-bad-'));
  try {
    const all = { ...radiolessHubEnv(dataDir), ...env };
    const config = loadConfig(all);
    try {
      await createHub(config, { log, defaultMetrics: false, env: all });
    } catch (error) {
      return error as Error;
    }
    throw new Error('expected the hub to refuse to start');
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * `body` on a fresh database file with the audit migrations up to `version` applied (a migration
 * test writes rows as that version did, then runs the rest); closed and removed afterwards.
 */
export function atAuditVersion(version: number, body: (db: Database) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-audit-migration-'));
  const db = openDatabase(join(dir, 'hub.sqlite'));
  try {
    migrateComponent(db, AUDIT_COMPONENT, AUDIT_MIGRATIONS.slice(0, version));
    body(db);
  } finally {
    closeDatabase(db);
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface AuditTestApp {
  app: Hono;
  db: Database;
  repos: AuditRepositories;
  collector: AuditCollectorActor;
  maintenance: AuditMaintenanceActor;
  registry: Registry;
  /** Every actor the plugin returned, in start order. */
  actors: Actor[];
  request(path: string, init?: RequestInit): Promise<Response>;
  /** A token of the hub's own issuer (what `meshhub token` and POST /api/v1/auth/token give a local user). */
  hubToken(username: string, roles: readonly string[]): Promise<string>;
  // biome-ignore lint/suspicious/noExplicitAny: tests read problem and event bodies of many shapes
  json(path: string, init?: RequestInit): Promise<{ status: number; headers: Headers; body: any }>;
  close(): Promise<void>;
}

export async function auditApp(
  env: Record<string, string> = {},
  options: {
    log?: pino.Logger;
    /** HTTP_HOST as the plugin sees it (default loopback); nothing listens here, the app is called in-process. */
    listenHost?: string;
  } = {},
): Promise<AuditTestApp> {
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-audit-'));
  const db = openDatabase(join(dir, 'hub.sqlite'));
  const all = { ...QUIET_ENV, ...env };
  // The identity provider is the hub's (AUTH_JWKS_URL, AUTH_ISSUER, AUTH_AUDIENCE, AUTH_ROLES_CLAIM).
  const provider =
    all.AUTH_JWKS_URL && all.AUTH_ISSUER && all.AUTH_AUDIENCE
      ? {
          jwksUrl: all.AUTH_JWKS_URL,
          issuer: all.AUTH_ISSUER,
          audience: all.AUTH_AUDIENCE,
          ...(all.AUTH_ROLES_CLAIM ? { rolesClaim: all.AUTH_ROLES_CLAIM } : {}),
        }
      : undefined;
  const { host, mounts, metrics, scheduler, identity } = await standaloneModuleHost({
    db,
    dataDir: dir,
    log: options.log ?? silent,
    version: '9.9.9',
    ...(provider ? { provider } : {}),
  });
  const input = Object.fromEntries(
    Object.entries(all).filter(
      ([key, value]) => sliceKeys(auditSettings, [key]).includes(key) && value.trim() !== '',
    ),
  );
  const module =
    options.listenHost === undefined
      ? auditModule
      : {
          ...auditModule,
          create: (ctx: Parameters<typeof auditModule.create>[0]) =>
            auditModule.create({ ...ctx, hub: { ...ctx.hub, listenHost: options.listenHost! } }),
        };
  let actors: Actor[];
  try {
    actors = await host.create(module, auditSettings.parse(input), { plugin: true });
  } catch (error) {
    closeDatabase(db);
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  for (const actor of actors) await actor.start();
  // As in the hub: the scheduler starts after the actors its jobs drive.
  await scheduler.start();
  const app = standaloneApp(mounts, metrics, '9.9.9');
  const repos = openAuditRepositories(db);
  const request = (path: string, init?: RequestInit) => Promise.resolve(app.request(path, init));
  return {
    app,
    db,
    repos,
    collector: actors.find((a) => a.name === 'audit-collector') as AuditCollectorActor,
    maintenance: actors.find((a) => a.name === 'audit-maintenance') as AuditMaintenanceActor,
    registry: metrics.registry,
    actors,
    request,
    // A token of a user the hub knows: local tokens of unknown users are refused (revocation).
    hubToken: (username, roles) => localUserToken(db, identity.localIssuer, username, roles),
    async json(path, init) {
      const res = await request(path, init);
      const text = await res.text();
      return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
    },
    async close() {
      await scheduler.stop();
      for (const actor of actors.slice().reverse()) await actor.stop();
      closeDatabase(db);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A token of the hub's own issuer for a user the hub knows (made, or given `roles`, first: local
 * tokens of unknown users are refused), as `meshhub token` gives one.
 */
export async function localUserToken(
  db: Database,
  issuer: LocalIssuer,
  username: string,
  roles: readonly string[],
): Promise<string> {
  const users = new HubUserService(db);
  if (!(await users.get(username))) await users.add({ username, password: 'a-test-password', roles });
  else await users.setRoles(username, roles);
  const tokenVersion = await users.tokenVersion(username);
  const subject = { username, roles: [...roles], ...(tokenVersion === undefined ? {} : { tokenVersion }) };
  return (await issuer.issue(subject, 600)).accessToken;
}

/** The MCP tests' data; answers the id of the Teams event (gated with PRIVACY_SERVICES=teams). */
export function seedMcpData(db: Database, now: number): string {
  seed(openAuditRepositories(db), [
    {
      source: 'directory',
      at: now - 3_600_000,
      operation: 'Add user',
      actor: 'eve@contoso.com',
      result: 'failure',
    },
    { source: 'directory', at: now - 7_200_000, operation: 'Delete user', actor: 'eve@contoso.com' },
    { at: now - 1_800_000, service: 'MicrosoftTeams', operation: 'MemberAdded', actor: 'dave@contoso.com' },
  ]);
  new NodeRepository(db).upsert({
    nodeNum: 0xa1b2c3d4,
    nodeId: '!a1b2c3d4',
    shortName: 'N1',
    longName: 'North',
  });
  return String(db.prepare("SELECT seq FROM audit_events WHERE service = 'teams'").pluck().get());
}

/**
 * For suites whose tests each start their own app: the function returned starts one with `env`;
 * every app it started is closed after each test.
 */
export function appPerTest(): (env?: Record<string, string>) => Promise<AuditTestApp> {
  const started: AuditTestApp[] = [];
  afterEach(async () => {
    for (const t of started.splice(0)) await t.close();
  });
  return async (env = {}) => {
    const t = await auditApp(env);
    started.push(t);
    return t;
  };
}

/** `t` served on a loopback socket (streams go through it): its base URL, and close() for the server. */
export async function serveOnLoopback(t: AuditTestApp): Promise<{ base: string; close(): Promise<void> }> {
  let server!: ReturnType<typeof serve>;
  await new Promise<void>((resolve) => {
    server = serve({ fetch: t.app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve());
  });
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      (server as Server).closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** The audit app for export tests: one export at a time, `events` stored, served on loopback at `base`. */
export async function servedExportApp(
  events: readonly SeedEvent[],
): Promise<AuditTestApp & { base: string }> {
  const t = await auditApp(ONE_EXPORT_AT_A_TIME);
  seed(t.repos, events);
  const served = await serveOnLoopback(t);
  return {
    ...t,
    base: served.base,
    async close() {
      await served.close();
      await t.close();
    },
  };
}

/** A local identity provider and the audit app verifying its tokens (idpAuthEnv, then `env`). */
export async function idpAuditApp(
  env: Record<string, string> = {},
): Promise<{ idp: LocalIdp; t: AuditTestApp }> {
  const idp = await startLocalIdp();
  const t = await auditApp({ ...idpAuthEnv(idp), ...env });
  return { idp, t };
}

/**
 * A caller of `t` that checks every answer against the OpenAPI document behind `conformance`
 * (`path` is the document's path, `url` the one requested).
 */
export const conformingCaller =
  (t: () => AuditTestApp, conformance: Conformance) =>
  async (method: HttpMethod, path: string, url: string, body?: unknown) => {
    const res = await t().request(
      url,
      body === undefined ? { method: method.toUpperCase() } : jsonInit(method.toUpperCase(), body),
    );
    const answer = { status: res.status, headers: res.headers, text: await res.text() };
    conformance.check(method, path, answer);
    return { ...answer, json: () => JSON.parse(answer.text) as Record<string, unknown> };
  };

/** The API operations `t` mounts (`METHOD /path/{param}`, sorted), its document routes left out. */
export const mountedOperations = (t: AuditTestApp): string[] =>
  [
    ...new Set(
      t.app.routes
        .filter((r) => r.method !== 'ALL' && r.path.startsWith('/api/'))
        .filter((r) => !/\/(openapi\.json|docs)$/.test(r.path))
        .map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}`),
    ),
  ].sort();

/** The MCP tools of the hub without AI features (with them, `ask` too). */
export const HUB_MCP_TOOLS = [
  'get_event',
  'get_summary',
  'latest_readings',
  'list_nodes',
  'reading_history',
  'search_events',
];

export const jsonInit = (
  method: string,
  body: unknown,
  headers: Record<string, string> = {},
): RequestInit => ({
  method,
  headers: { 'content-type': 'application/json', ...headers },
  body: typeof body === 'string' ? body : JSON.stringify(body),
});

export interface SeedEvent {
  source?: SourceName;
  service?: string;
  operation?: string;
  result?: string;
  actor?: string;
  at: number;
  id?: string;
  target?: string;
  /** The tenant it is collected from (issue 29); `default` when not given. */
  tenant?: string;
}

/** Stores events through the real normaliser and writer (as the collector would). */
export function seed(repos: AuditRepositories, events: readonly SeedEvent[]): void {
  const normalized = events.map((e, i) => {
    const source = e.source ?? 'exchange';
    const record =
      source === 'directory'
        ? {
            id: e.id ?? `seed-${i}-${e.at}`,
            activityDateTime: new Date(e.at).toISOString(),
            activityDisplayName: e.operation ?? 'Add user',
            result: e.result ?? 'success',
            initiatedBy: { user: { userPrincipalName: e.actor ?? 'someone@contoso.com' } },
          }
        : {
            Id: e.id ?? `seed-${i}-${e.at}`,
            CreationTime: new Date(e.at).toISOString().slice(0, 19),
            Operation: e.operation ?? 'MailItemsAccessed',
            ResultStatus: e.result ?? 'Succeeded',
            UserId: e.actor ?? 'someone@contoso.com',
            Workload: e.service ?? 'Exchange',
            ObjectId: e.target ?? 'mailbox',
          };
    const outcome = normalizeRecord(source, record, Number.MAX_SAFE_INTEGER, e.tenant);
    if (!outcome.ok) throw new Error(outcome.reason);
    return outcome.event;
  });
  repos.writer.writeNow(normalized);
}

/** A logger whose JSON lines land in `lines`, with the hub's redaction rules. */
export function capturingLogger(): { log: pino.Logger; lines: string[] } {
  const lines: string[] = [];
  const log = createLogger({ level: 'debug', destination: { write: (line: string) => lines.push(line) } });
  return { log, lines };
}

/**
 * `meshhub start` of the built CLI (dist/) with PLUGINS=audit, loopback ports, no radio and a
 * silent log: the test's own environment without `without`, then `env`. For start-up refusals.
 */
export function startAuditCli(
  dataDir: string,
  env: Record<string, string>,
  without: readonly string[] = [],
): SpawnSyncReturns<string> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build dist/ first (npm run build)`);
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !without.includes(k)));
  return spawnSync(process.execPath, [CLI, 'start'], {
    env: {
      ...inherited,
      DATA_DIR: dataDir,
      HTTP_PORT: '0',
      MESH_API_PORT: '0',
      RADIO: 'none',
      MQTT_PORT: '0',
      LOG_LEVEL: 'silent',
      PLUGINS: 'audit',
      ...QUIET_ENV,
      ...env,
    },
    encoding: 'utf8',
    timeout: 20_000,
  });
}
