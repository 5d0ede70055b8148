/**
 * The plugin seam (DESIGN.md "Layout"): a plugin is a folder under `plugins/` exporting one
 * `Plugin`. It sees only the narrow, versioned `PluginContext`, never hub internals or another
 * plugin. Its actors are optional: a plugin that keeps failing is disabled, the hub runs on.
 */
import type { Hono } from 'hono';
import type { Registry } from 'prom-client';
import type { Actor, KernelLogger } from './actor.js';

/** Bumped on any breaking change to PluginContext. */
export const PLUGIN_API_VERSION = 1;

export interface PluginContext<Bus = unknown, Db = unknown> {
  apiVersion: typeof PLUGIN_API_VERSION;
  bus: Bus;
  /** The store's connection, once the store actor has started (call inside `start()`). */
  db: () => Db;
  /** This plugin's own slice of the environment (the plugin validates it). */
  env: Readonly<Record<string, string | undefined>>;
  log: KernelLogger;
  /** Mounts routes on the hub's HTTP server (at start-up, before the server listens). */
  mount: (path: string, routes: Hono) => void;
  /** The hub's metrics registry: a plugin's metrics appear in the hub's `/metrics`. */
  metrics: Registry;
}

export interface Plugin<Ctx extends PluginContext = PluginContext> {
  name: string;
  /** Actors to supervise (all optional). Must only assign in constructors; work starts in `start()`. */
  create(context: Ctx): Actor[] | Promise<Actor[]>;
}
