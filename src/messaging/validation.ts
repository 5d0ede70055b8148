/**
 * What the messaging routes check beyond the body schemas (schemas.ts): path node ids, the
 * Idempotency-Key header, and the fingerprint of a body for idempotent retries.
 */
import { createHash } from 'node:crypto';

export { bodyProblem } from '../auth/request-body.js';

import { ProblemError } from '../http/problem.js';
import { NODE_ID_HINT, NODE_ID_PATTERN, type OutboundMessageBody } from './schemas.js';

export {
  BROADCAST_NODE_ID,
  characterCount,
  isWellFormedText,
  MAX_NICKNAME_CHARACTERS,
  MAX_TEXT_BYTES,
  MAX_TEXT_CHARACTERS,
  messageTextSchema,
  NODE_ID_PATTERN,
  nicknameBodySchema,
  nodeIdSchema,
  type OutboundMessageBody,
  outboundMessageSchema,
  utf8Length,
} from './schemas.js';

/** A path parameter that must be a node id: 400 naming `node_id` otherwise. */
export function parseNodeIdParam(value: string | undefined, field = 'node_id'): string {
  const decoded = value ?? '';
  if (!NODE_ID_PATTERN.test(decoded)) {
    throw new ProblemError(400, `invalid ${field}`, { errors: [{ field, message: NODE_ID_HINT }] });
  }
  return decoded;
}

/**
 * The Idempotency-Key header: 1–255 printable ASCII characters, optionally as a quoted
 * structured-field string (draft-ietf-httpapi-idempotency-key-header). Undefined when absent.
 */
export function parseIdempotencyKey(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const value = /^"(.*)"$/.exec(header)?.[1] ?? header;
  if (!/^[\x21-\x7e]{1,255}$/.test(value)) {
    throw new ProblemError(400, 'invalid Idempotency-Key', {
      errors: [
        { field: 'Idempotency-Key', message: 'must be 1–255 printable ASCII characters without spaces' },
      ],
    });
  }
  return value;
}

/** Fingerprint of a validated request body: the same key with another body is refused. */
export function requestHash(body: OutboundMessageBody): string {
  return createHash('sha256')
    .update(JSON.stringify([body.target_node_id, body.text]))
    .digest('base64url');
}
