/**
 * What the messaging API accepts (spec "Outbound message"): `target_node_id` and `text`, both
 * required, nothing else. Text: at most 200 characters (Unicode code points) AND at most 233
 * bytes in UTF-8 — one radio packet's payload (Constants.DATA_PAYLOAD_LEN) — each limit named
 * when exceeded; not empty or whitespace only; no control characters but tab and newline.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';

export { bodyProblem } from '../auth/request-body.js';

import { ProblemError } from '../http/problem.js';

export const NODE_ID_PATTERN = /^![0-9a-f]{8}$/;
export const BROADCAST_NODE_ID = '!ffffffff';
export const MAX_TEXT_CHARACTERS = 200;
/** Meshtastic Constants.DATA_PAYLOAD_LEN: the most a Data.payload may carry. */
export const MAX_TEXT_BYTES = 233;
export const MAX_NICKNAME_CHARACTERS = 40;

const NODE_ID_HINT = 'must be a node id: "!" and 8 lower-case hex digits, e.g. !a1b2c3d4';
// C0 controls but tab (09) and newline (0a), DEL and C1 controls.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

const requiredString = (what: string) =>
  z.string({ error: (i) => (i.input === undefined ? 'is required' : `must be ${what}`) });

export const nodeIdSchema = requiredString('a string').superRefine((value, ctx) => {
  if (!NODE_ID_PATTERN.test(value)) ctx.addIssue({ code: 'custom', message: NODE_ID_HINT });
  else if (value === BROADCAST_NODE_ID) {
    ctx.addIssue({ code: 'custom', message: 'is the broadcast address; a message goes to one node' });
  }
});

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** False when the string holds an unpaired UTF-16 surrogate (it has no UTF-8 encoding). */
export function isWellFormedText(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}

export function characterCount(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

export function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

export const messageTextSchema = requiredString('a string').superRefine((text, ctx) => {
  if (!isWellFormedText(text)) {
    ctx.addIssue({ code: 'custom', message: 'must be valid Unicode (it holds a lone surrogate)' });
    return;
  }
  if (text.trim() === '') ctx.addIssue({ code: 'custom', message: 'must not be empty or only whitespace' });
  if (CONTROL.test(text)) {
    ctx.addIssue({
      code: 'custom',
      message: 'must not contain control characters other than tab and newline',
    });
  }
  const chars = characterCount(text);
  if (chars > MAX_TEXT_CHARACTERS) {
    ctx.addIssue({
      code: 'custom',
      message: `must be at most ${MAX_TEXT_CHARACTERS} characters (got ${chars})`,
    });
  }
  const bytes = utf8Length(text);
  if (bytes > MAX_TEXT_BYTES) {
    ctx.addIssue({
      code: 'custom',
      message: `must fit one radio packet: at most ${MAX_TEXT_BYTES} bytes in UTF-8 (got ${bytes})`,
    });
  }
});

export const outboundMessageSchema = z
  .object({ target_node_id: nodeIdSchema, text: messageTextSchema })
  .strict();
export type OutboundMessageBody = z.output<typeof outboundMessageSchema>;

export const nicknameBodySchema = z
  .object({
    nickname: z.union([
      z.null(),
      requiredString('a string or null').superRefine((value, ctx) => {
        if (value.trim() === '')
          ctx.addIssue({ code: 'custom', message: 'must not be empty; send null to clear it' });
        if (CONTROL.test(value) || !isWellFormedText(value)) {
          ctx.addIssue({ code: 'custom', message: 'must be plain text' });
        }
        if (characterCount(value) > MAX_NICKNAME_CHARACTERS) {
          ctx.addIssue({ code: 'custom', message: `must be at most ${MAX_NICKNAME_CHARACTERS} characters` });
        }
      }),
    ]),
  })
  .strict();

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
