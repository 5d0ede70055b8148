/**
 * A route group's OpenAPI operations, declared in the routes file that registers the handlers
 * (right above them), so no separate builder can drift from the routes. The assembly
 * (hub/openapi.ts, the plugins' document functions) only puts the groups' declarations in one
 * document with openApiDocument (openapi.ts).
 *
 * A declaration's path is the group's own, as its routes register it but in OpenAPI form
 * (`/latest`, `/conversations/{node_id}`, `/` for the group itself); `base` is where the group
 * is mounted. Whether every served route is declared, and every declared one served, is checked
 * against a running hub (tests/http/openapi.test.ts and the plugins' openapi tests).
 */
import type { OperationSpec } from './openapi.js';

/** One operation of a route group: an OperationSpec with the path relative to the group. */
export type RouteOperation = OperationSpec;

/** The group's operations under `base`: `/` is the base itself. */
export function describeRoutes(base: string, operations: readonly RouteOperation[]): OperationSpec[] {
  const at = base.replace(/\/+$/, '');
  return operations.map((op) => ({ ...op, path: op.path === '/' ? at || '/' : `${at}${op.path}` }));
}
