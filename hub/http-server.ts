import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import type { Hono } from 'hono';
import type { HubBus } from '../src/events.js';
import { createHttpApp } from '../src/http/app.js';
import type { HealthReport } from '../src/http/health.js';
import type { RouteProvider } from '../src/http/routes.js';
import { Actor } from '../src/kernel/actor.js';
import type { Logger } from '../src/log.js';
import type { HubMetrics } from '../src/metrics.js';

/** Serves the HTTP API on HTTP_HOST:HTTP_PORT. */
export class HttpServerActor extends Actor {
  readonly name = 'http';
  override readonly dependsOn: readonly string[];
  private server: ServerType | undefined;
  private boundPort: number | undefined;
  app: Hono | undefined;

  constructor(
    private readonly deps: {
      bus: HubBus;
      log: Logger;
      metrics: HubMetrics;
      /** Route groups, built when the server starts; features add theirs in hub/main.ts. */
      routes: RouteProvider[];
      dependsOn: string[];
      host: string;
      port: number;
      version: string;
      health: () => HealthReport;
    },
  ) {
    super();
    this.dependsOn = deps.dependsOn;
  }

  get port(): number {
    if (this.boundPort === undefined) throw new Error('the HTTP server is not listening');
    return this.boundPort;
  }

  async start(): Promise<void> {
    const { bus, log } = this.deps;
    const routes = this.deps.routes.flatMap((provide) => provide({ bus, owner: this.name }));
    this.app = createHttpApp({
      log,
      metrics: this.deps.metrics,
      version: this.deps.version,
      health: this.deps.health,
      routes,
    });
    const app = this.app;
    await new Promise<void>((resolve, reject) => {
      const server = serve({ fetch: app.fetch, hostname: this.deps.host, port: this.deps.port }, (info) => {
        this.boundPort = info.port;
        resolve();
      });
      server.once('error', reject);
      this.server = server;
    });
    this.server?.on('error', (err) => this.crash(err));
    log.info({ host: this.deps.host, port: this.boundPort }, 'http listening');
  }

  override describe(): Record<string, unknown> {
    return this.boundPort === undefined ? {} : { port: this.boundPort };
  }

  async stop(): Promise<void> {
    this.deps.bus.removeOwner(this.name);
    const server = this.server;
    this.server = undefined;
    this.boundPort = undefined;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      // Keep-alive and streaming connections would hold close() open; the hub is stopping.
      if ('closeAllConnections' in server) (server as { closeAllConnections(): void }).closeAllConnections();
    });
  }

  /** The address the server actually bound (for tests using port 0). */
  address(): AddressInfo | undefined {
    const a = this.server?.address();
    return a && typeof a === 'object' ? a : undefined;
  }
}
