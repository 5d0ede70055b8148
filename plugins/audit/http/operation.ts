/**
 * What every route of the audit plugin declares alike in its OpenAPI operation (each routes file
 * declares its own beside its handlers; openapi.ts assembles them): an optional bearer token
 * (required with AUTH_ENABLED), the refusals of a signed-in route (`refusals`: the reader's, or
 * an administrator's), and, for a route that checks a parameter or a body, the 400 naming each
 * bad field. The route's own `responses` come over these (its 403, say, over the signed-in one).
 */
import type { z } from 'zod';
import { COMMON_PROBLEMS, type OperationSpec, type ResponseSpec } from '../../../src/http/openapi.js';

export type AuditOperation = Omit<OperationSpec, 'security'>;

/** A route with nothing to check in the request: the optional bearer and `refusals`. */
export function signedInOperation(refusals: Record<number, ResponseSpec>, op: AuditOperation): OperationSpec {
  return { ...op, security: 'optional-bearer', responses: { ...refusals, ...op.responses } };
}

/** A route that checks a parameter or a body: as signedInOperation, and the 400 for bad input. */
export function checkedOperation(refusals: Record<number, ResponseSpec>, op: AuditOperation): OperationSpec {
  return signedInOperation({ 400: COMMON_PROBLEMS.badInput, ...refusals }, op);
}

/** A search: `GET` with the filters in `query`, answered with one page of `page` (cursor paged). */
export function searchOperation(
  refusals: Record<number, ResponseSpec>,
  op: Omit<AuditOperation, 'method' | 'params' | 'responses'> & { query: z.ZodObject; page: z.ZodType },
): OperationSpec {
  const { query, page, ...rest } = op;
  return checkedOperation(refusals, {
    ...rest,
    method: 'get',
    params: { query },
    responses: { 200: { description: 'One page.', body: page } },
  });
}
