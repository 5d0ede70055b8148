/**
 * Where each module's routes are served, owned by the HTTP actor: modules call `mount` while
 * they are created, and the server assembles the app when it starts.
 *
 * - One path, one owner: a second module mounting a path another serves, or a path under the
 *   hub's own operational routes, is refused at start-up (ModuleMountError), so plugins cannot
 *   shadow each other or the core by accident.
 * - Order is the server's: longer paths first, the web app at `/` (its SPA fallback) last,
 *   whatever order the modules were listed in.
 * - Upgrades (WebSocket) are claimed per exact path.
 */
import type { Hono } from 'hono';
import type { Component, RouteMount } from './routes.js';

export class ModuleMountError extends Error {
  override readonly name = 'ModuleMountError';
}

/** Served by the HTTP app itself (src/http/app.ts); no module may mount over them. */
const OPERATIONAL = ['/health', '/metrics', '/api/version'];

export interface OwnedMount extends RouteMount {
  owner: string;
}

function normalise(path: string): string {
  if (!path.startsWith('/')) throw new ModuleMountError(`mount path "${path}" must start with "/"`);
  return path.length > 1 ? path.replace(/\/+$/, '') : path;
}

export class HttpMounts<Upgrade = unknown> {
  private readonly mounts: OwnedMount[] = [];
  private readonly upgrades = new Map<string, { owner: string; handler: Upgrade }>();

  // biome-ignore lint/suspicious/noExplicitAny: any Hono app, whatever its declared variables
  mount(owner: string, path: string, app: Hono<any>, component?: Component): void {
    const at = normalise(path);
    if (OPERATIONAL.some((p) => at === p || at.startsWith(`${p}/`)))
      throw new ModuleMountError(`${owner}: "${at}" is served by the hub itself`);
    const taken = this.mounts.find((m) => m.path === at && m.owner !== owner);
    if (taken) throw new ModuleMountError(`${owner}: "${at}" is already served by ${taken.owner}`);
    this.mounts.push({ owner, path: at, app: app as Hono, ...(component ? { component } : {}) });
  }

  upgrade(owner: string, path: string, handler: Upgrade): void {
    const at = normalise(path);
    const taken = this.upgrades.get(at);
    if (taken)
      throw new ModuleMountError(`${owner}: upgrades of "${at}" are already taken by ${taken.owner}`);
    this.upgrades.set(at, { owner, handler });
  }

  /** Route groups in serving order: longest path first, `/` last. */
  ordered(): OwnedMount[] {
    return this.mounts
      .map((m, index) => ({ m, index }))
      .sort((a, b) => b.m.path.length - a.m.path.length || a.index - b.index)
      .map(({ m }) => m);
  }

  upgradeFor(pathname: string): Upgrade | undefined {
    return this.upgrades.get(pathname)?.handler;
  }

  get hasUpgrades(): boolean {
    return this.upgrades.size > 0;
  }
}
