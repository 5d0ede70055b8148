/**
 * What the messaging routes check beyond the body schemas (schemas.ts): path node and message
 * ids, the Idempotency-Key header, and the fingerprint of a body for idempotent retries.
 */
import { createHash } from 'node:crypto';
import type { Context } from 'hono';
import { bodyProblem, readJsonBody } from '../auth/request-body.js';

export { bodyProblem };

import { fieldProblem } from '../http/problem.js';
import { type Message, messageRecordJson } from './message.js';
import type { IdempotencyInput } from './message-repository.js';
import {
  MESSAGE_ID_PATTERN,
  NODE_ID_HINT,
  NODE_ID_PATTERN,
  nicknameBodySchema,
  type OutboundMessageBody,
  outboundMessageSchemaFor,
} from './schemas.js';

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
    throw fieldProblem(field, NODE_ID_HINT);
  }
  return decoded;
}

/** The `{id}` path parameter: a message id (a UUID); 400 naming `id` otherwise. */
export function parseMessageIdParam(id: string): string {
  if (!MESSAGE_ID_PATTERN.test(id)) {
    throw fieldProblem('id', 'must be a message id (a UUID)');
  }
  return id;
}

/**
 * The Idempotency-Key header: 1–255 printable ASCII characters, optionally as a quoted
 * structured-field string (draft-ietf-httpapi-idempotency-key-header). Undefined when absent.
 */
export function parseIdempotencyKey(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const value = /^"(.*)"$/.exec(header)?.[1] ?? header;
  if (!/^[\x21-\x7e]{1,255}$/.test(value)) {
    throw fieldProblem('Idempotency-Key', 'must be 1–255 printable ASCII characters without spaces');
  }
  return value;
}

/** Fingerprint of a validated request body: the same key with another body is refused. */
export function requestHash(body: OutboundMessageBody): string {
  const fields: unknown[] = [body.target_node_id, body.text];
  if (body.hold_hours !== undefined) fields.push(body.hold_hours);
  return createHash('sha256').update(JSON.stringify(fields)).digest('base64url');
}

const bodySchemas = new Map<number, ReturnType<typeof outboundMessageSchemaFor>>();

/**
 * A send (POST /api/v1/messages): its Idempotency-Key (400 when malformed), its body (400, with
 * `hold_hours` at most `maxHoldHours`), and the body's fingerprint (`''` without a key).
 */
export async function readSendRequest(
  c: Context,
  maxHoldHours = Number.POSITIVE_INFINITY,
): Promise<{ key: string | undefined; body: OutboundMessageBody; hash: string }> {
  const key = parseIdempotencyKey(c.req.header('idempotency-key'));
  let schema = bodySchemas.get(maxHoldHours);
  if (!schema) {
    schema = outboundMessageSchemaFor(maxHoldHours);
    bodySchemas.set(maxHoldHours, schema);
  }
  const parsed = schema.safeParse(await readJsonBody(c));
  if (!parsed.success) throw bodyProblem(parsed.error);
  const body = parsed.data;
  return { key, body, hash: key === undefined ? '' : requestHash(body) };
}

/** A conversation's new nickname (PATCH): trimmed, or null to clear it; 400 otherwise. */
export async function readNickname(c: Context): Promise<string | null> {
  const parsed = nicknameBodySchema.safeParse(await readJsonBody(c));
  if (!parsed.success) throw bodyProblem(parsed.error);
  return parsed.data.nickname === null ? null : parsed.data.nickname.trim();
}

/** With a key, what the send stores for retries with it (the 202's body); without, nothing. */
export function idempotencyFor(key: string | undefined, hash: string): { idempotency?: IdempotencyInput } {
  if (key === undefined) return {};
  return {
    idempotency: { key, requestHash: hash, response: (m: Message) => JSON.stringify(messageRecordJson(m)) },
  };
}
