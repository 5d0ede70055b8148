import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { type ServerType, serve } from '@hono/node-server';
import type { Hono } from 'hono';
import { createHttpApp } from '../src/http/app.js';
import type { HealthReport } from '../src/http/health.js';
import { HostAllowlist } from '../src/http/host-check.js';
import type { HttpMounts } from '../src/http/mounts.js';
import { refuseMisdirectedUpgrade, refuseUpgrade, serveWithoutUpgrade } from '../src/http/refuse-upgrade.js';
import type { Component } from '../src/http/routes.js';
import { Actor } from '../src/kernel/actor.js';
import { bindFailure } from '../src/kernel/startup-failure.js';
import type { Logger } from '../src/log.js';
import type { HubMetrics } from '../src/metrics.js';
import type { UpgradeHandler } from '../src/module.js';

/**
 * Serves the HTTP API on HTTP_HOST:HTTP_PORT and, with HTTP_COMPONENT_PORTS, on one extra port
 * per component of the spec, each serving only the route groups of that component. Every
 * listener, WebSocket upgrades included, answers only to the hub's own names (HTTP_ALLOWED_HOSTS,
 * src/http/host-check.ts).
 */
export class HttpServerActor extends Actor {
  readonly name = 'http';
  override readonly dependsOn: readonly string[];
  private server: ServerType | undefined;
  private boundPort: number | undefined;
  private readonly componentServers = new Map<Component, { server: ServerType; port?: number }>();
  /** Sockets handed over on upgrade: the server still counts them, so stop() must end them. */
  private readonly upgraded = new Set<Duplex>();
  app: Hono | undefined;

  constructor(
    private readonly deps: {
      log: Logger;
      metrics: HubMetrics;
      /** What the modules mount (ctx.mount, ctx.upgrade); this actor owns the order. */
      mounts: HttpMounts<UpgradeHandler>;
      dependsOn: string[];
      host: string;
      port: number;
      version: string;
      health: () => HealthReport;
      /** HTTP_COMPONENT_PORTS: component → port (0: any free port). */
      componentPorts?: Partial<Record<Component, number>>;
      /** HTTP_ALLOWED_HOSTS: names answered to besides IP literals, localhost and the machine's name. */
      allowedHosts?: readonly string[];
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
    const { log, mounts } = this.deps;
    const routes = mounts.ordered();
    const allowedHosts = new HostAllowlist(this.deps.allowedHosts ?? []);
    this.app = createHttpApp({
      log,
      metrics: this.deps.metrics,
      version: this.deps.version,
      health: this.deps.health,
      routes,
      allowedHosts,
    });
    this.boundPort = await this.listen(this.app, this.deps.port, 'HTTP_PORT', (server) => {
      this.server = server;
    });
    // Listened for even when no module upgrades anything: Node then serves an upgrade request
    // itself but drops what the client sends after it on that connection. Only HTTP/1.1 servers
    // (serve() makes one) see upgrades.
    const server = this.server as Server | undefined;
    if (server) {
      server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
        // The same names as every other request (the app checks the h2c case itself).
        const host = request.headers.host;
        if (host !== undefined && !allowedHosts.allows(host)) {
          refuseMisdirectedUpgrade(socket, host);
          return;
        }
        // Modules claim WebSocket upgrades per path. Any other upgrade (h2c from `curl --http2`)
        // is served as the plain request it also is; a WebSocket to a path nobody upgrades (any
        // path while MQTT_WEBSOCKET is off) gets a 404 problem.
        if (request.headers.upgrade?.toLowerCase() !== 'websocket') {
          serveWithoutUpgrade(server, request, socket, head);
          return;
        }
        const pathname = pathOf(request);
        const handler = mounts.upgradeFor(pathname);
        if (!handler) {
          refuseUpgrade(socket, pathname);
          return;
        }
        this.upgraded.add(socket);
        socket.once('close', () => this.upgraded.delete(socket));
        handler(request, socket, head);
      });
    }
    log.info(
      { host: this.deps.host, port: this.boundPort, allowedHosts: allowedHosts.names },
      'http listening (besides IP literals, answers only to these names: HTTP_ALLOWED_HOSTS adds more)',
    );
    for (const [component, port] of Object.entries(this.deps.componentPorts ?? {}) as [Component, number][]) {
      const app = createHttpApp({
        log,
        metrics: this.deps.metrics,
        version: this.deps.version,
        health: this.deps.health,
        routes: routes.filter((r) => r.component === component),
        allowedHosts,
      });
      const entry: { server?: ServerType; port?: number } = {};
      entry.port = await this.listen(app, port, 'HTTP_COMPONENT_PORTS', (server) => {
        entry.server = server;
        this.componentServers.set(component, entry as { server: ServerType });
      });
      log.info({ host: this.deps.host, port: entry.port, component }, 'http component port listening');
    }
  }

  /** Listens on `port`; a taken port fails the start at once, naming `setting` (no restarts). */
  private listen(
    app: Hono,
    port: number,
    setting: string,
    created: (server: ServerType) => void,
  ): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      const refused = (error: unknown) =>
        reject(
          bindFailure(error, { portSetting: setting, port, host: this.deps.host, hostSetting: 'HTTP_HOST' }),
        );
      const server = serve({ fetch: app.fetch, hostname: this.deps.host, port }, (info) => {
        server.off('error', refused);
        server.on('error', (err) => this.crash(err));
        resolve(info.port);
      });
      server.once('error', refused);
      created(server);
    });
  }

  /** The port a component listens on (HTTP_COMPONENT_PORTS), once started. */
  componentPort(component: Component): number | undefined {
    return this.componentServers.get(component)?.port;
  }

  override describe(): Record<string, unknown> {
    if (this.boundPort === undefined) return {};
    const components = Object.fromEntries([...this.componentServers].map(([c, e]) => [c, e.port]));
    return { port: this.boundPort, ...(this.componentServers.size ? { component_ports: components } : {}) };
  }

  async stop(): Promise<void> {
    const servers = [this.server, ...[...this.componentServers.values()].map((e) => e.server)];
    this.server = undefined;
    this.boundPort = undefined;
    this.componentServers.clear();
    for (const socket of this.upgraded) socket.destroy();
    this.upgraded.clear();
    await Promise.all(
      servers.map(
        (server) =>
          server &&
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            // Keep-alive and streaming connections would hold close() open; the hub is stopping.
            if ('closeAllConnections' in server)
              (server as { closeAllConnections(): void }).closeAllConnections();
          }),
      ),
    );
  }

  /** The address the server actually bound (for tests using port 0). */
  address(): AddressInfo | undefined {
    const a = this.server?.address();
    return a && typeof a === 'object' ? a : undefined;
  }
}

/** The request's path; '' for a target no URL parser accepts (then no upgrade handler matches). */
function pathOf(request: IncomingMessage): string {
  try {
    return new URL(request.url ?? '/', 'http://hub').pathname;
  } catch {
    return '';
  }
}
