import type { Hono } from 'hono';

/** Which of the spec's logical components a route group belongs to (for HTTP_COMPONENT_PORTS). */
export type Component = 'ingestion' | 'weather' | 'gateway' | 'billing' | 'hub';

export interface RouteMount {
  path: string;
  app: Hono;
  component?: Component;
}
