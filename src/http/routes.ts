import type { Hono } from 'hono';
import type { HubBus } from '../domain/events.js';

/** Which of the spec's logical components a route group belongs to (for HTTP_COMPONENT_PORTS). */
export type Component = 'ingestion' | 'weather' | 'gateway' | 'billing' | 'hub';

export interface RouteMount {
  path: string;
  app: Hono;
  component?: Component;
}

/**
 * Contributes route groups to the HTTP server. Called when the server starts (after the store
 * and the actors it depends on are running); bus listeners must be registered under `owner`,
 * so they are removed when the server stops.
 */
export type RouteProvider = (ctx: { bus: HubBus; owner: string }) => RouteMount | RouteMount[];
