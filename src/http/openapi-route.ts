/**
 * A route group's OpenAPI operations, declared in the routes file that registers the handlers
 * (right above them), so no separate builder can drift from the routes: the document's assembly
 * (hub/openapi.ts) only puts the groups' declarations in one document with openApiDocument
 * (openapi.ts). The plugins' routes files declare theirs the same way, with whole paths.
 *
 * Here a declaration's path is the group's own, as its routes register it but in OpenAPI form
 * (`/latest`, `/conversations/{node_id}`, `/` for the group itself); `base` is where the group
 * is mounted. That every served route is declared, and every declared one served, is checked
 * against a running hub (tests/http/openapi.test.ts).
 */
import type { OperationSpec } from './openapi.js';

/** The group's operations with their paths under `base` (`/` is the base itself). */
export function describeRoutes(base: string, operations: readonly OperationSpec[]): OperationSpec[] {
  const at = base.replace(/\/+$/, '');
  return operations.map((op) => ({ ...op, path: op.path === '/' ? at || '/' : `${at}${op.path}` }));
}
