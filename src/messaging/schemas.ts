/**
 * `/api/v1/messages` in zod (spec "Outbound message", "Conversation summary", "Message record";
 * docs/architecture.md "Decisions"). Plain zod: the web UI takes its types from here.
 *
 * The outbound body: `target_node_id` and `text`, both required, and the optional `hold_hours`
 * (docs/held-texts.md; at most MESSAGE_HOLD_HOURS, checked in validation.ts). Text: at most 200
 * characters (Unicode code points) AND at most 233 bytes in UTF-8 — one radio packet's payload
 * (Constants.DATA_PAYLOAD_LEN) — each limit named when exceeded; not empty or whitespace only;
 * no control characters but tab and newline.
 */
import { z } from 'zod';
import { CURSOR_DESCRIPTION, limitParam, type PageLimits } from '../http/schemas.js';
import { CONTROL_CHAR_IN_MESSAGE } from '../kernel/text.js';

export const NODE_ID_PATTERN = /^![0-9a-f]{8}$/;
export const BROADCAST_NODE_ID = '!ffffffff';
export const MAX_TEXT_CHARACTERS = 200;
/** Meshtastic Constants.DATA_PAYLOAD_LEN: the most a Data.payload may carry. */
export const MAX_TEXT_BYTES = 233;
export const MAX_NICKNAME_CHARACTERS = 40;
export const MESSAGING_PAGE: PageLimits = { default: 1000, max: 10_000 };

export const NODE_ID_HINT = 'must be a node id: "!" and 8 lower-case hex digits, e.g. !a1b2c3d4';
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

const utf8 = new TextEncoder();

export function utf8Length(text: string): number {
  return utf8.encode(text).byteLength;
}

const requiredString = (what: string) =>
  z.string({ error: (i) => (i.input === undefined ? 'is required' : `must be ${what}`) });

export const nodeIdSchema = requiredString('a string')
  .superRefine((value, ctx) => {
    if (!NODE_ID_PATTERN.test(value)) ctx.addIssue({ code: 'custom', message: NODE_ID_HINT });
    else if (value === BROADCAST_NODE_ID) {
      ctx.addIssue({ code: 'custom', message: 'is the broadcast address; a message goes to one node' });
    }
  })
  .meta({ pattern: NODE_ID_PATTERN.source, description: 'A node id; not the broadcast address !ffffffff.' });

export const messageTextSchema = requiredString('a string')
  .superRefine((text, ctx) => {
    if (!isWellFormedText(text)) {
      ctx.addIssue({ code: 'custom', message: 'must be valid Unicode (it holds a lone surrogate)' });
      return;
    }
    if (text.trim() === '') ctx.addIssue({ code: 'custom', message: 'must not be empty or only whitespace' });
    if (CONTROL_CHAR_IN_MESSAGE.test(text)) {
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
  })
  .meta({
    minLength: 1,
    maxLength: MAX_TEXT_CHARACTERS,
    description: `At most ${MAX_TEXT_CHARACTERS} characters and ${MAX_TEXT_BYTES} bytes of UTF-8 (one radio packet); not blank; no control characters but tab and newline.`,
  });

export const holdHoursSchema = z
  .number({ error: 'must be a number of hours' })
  .min(0, 'must be at least 0 hours')
  .meta({
    description:
      'How long the text may wait for its node to come in range before it fails (hours; fractions allowed). ' +
      'Default and maximum: the hub’s MESSAGE_HOLD_HOURS (24 unless configured); 0: fail after the retries.',
    example: 6,
  });

export const outboundMessageSchema = z
  .object({ target_node_id: nodeIdSchema, text: messageTextSchema, hold_hours: holdHoursSchema.optional() })
  .strict();

/** The outbound body on a hub whose MESSAGE_HOLD_HOURS is `maxHoldHours`: `hold_hours` at most that. */
export function outboundMessageSchemaFor(maxHoldHours: number) {
  return outboundMessageSchema.extend({
    hold_hours: holdHoursSchema
      .max(maxHoldHours, `must be at most ${maxHoldHours} hours (this hub's MESSAGE_HOLD_HOURS)`)
      .optional(),
  });
}
export type OutboundMessageBody = z.output<typeof outboundMessageSchema>;

export const nicknameBodySchema = z
  .object({
    nickname: z.union([
      z.null(),
      requiredString('a string or null')
        .superRefine((value, ctx) => {
          if (value.trim() === '')
            ctx.addIssue({ code: 'custom', message: 'must not be empty; send null to clear it' });
          if (CONTROL_CHAR_IN_MESSAGE.test(value) || !isWellFormedText(value)) {
            ctx.addIssue({ code: 'custom', message: 'must be plain text' });
          }
          if (characterCount(value) > MAX_NICKNAME_CHARACTERS) {
            ctx.addIssue({
              code: 'custom',
              message: `must be at most ${MAX_NICKNAME_CHARACTERS} characters`,
            });
          }
        })
        .meta({ minLength: 1, maxLength: MAX_NICKNAME_CHARACTERS }),
    ]),
  })
  .strict()
  .meta({ description: 'Your name for the node; null clears it (the node’s own name shows again).' });

export const nodeIdPathSchema = z.object({
  node_id: z.string().regex(NODE_ID_PATTERN, NODE_ID_HINT),
});

export const MESSAGE_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export const messageIdPathSchema = z.object({
  id: z.string().regex(MESSAGE_ID_PATTERN).meta({ description: 'The message id (a UUID, lower case).' }),
});

export const pageQuerySchema = z.object({
  limit: limitParam(MESSAGING_PAGE).optional(),
  cursor: z.string().optional().meta({ description: CURSOR_DESCRIPTION }),
});

export const idempotencyHeaderSchema = z.object({
  'Idempotency-Key': z
    .string()
    // 1–255 printable ASCII characters, or a quoted string of them (validation.ts parseIdempotencyKey).
    .regex(/^"[\x21-\x7e]{1,255}"$|^(?!"[\x21-\x7e]*"$)[\x21-\x7e]{1,255}$/)
    .optional()
    .meta({
      description:
        'Retrying with the same key answers the first 202 again (Idempotent-Replayed: true); the same key with another body is a 422.',
    }),
});

export const streamQuerySchema = z.object({
  ticket: z
    .string()
    .optional()
    .meta({ description: 'A ticket from POST /api/v1/messages/stream/tickets; else send a bearer token.' }),
});

// --- responses ---

const utc = z.iso.datetime();
export const messageStatusSchema = z.enum(['queued', 'sent', 'delivered', 'failed', 'received', 'read']);
export const messageDirectionSchema = z.enum(['outbound', 'inbound']);

/** The spec's Message record, exactly its seven fields. */
export const messageRecordSchema = z.object({
  id: z.string().regex(MESSAGE_ID_PATTERN),
  direction: messageDirectionSchema,
  sender_node_id: z.string().nullable(),
  target_node_id: z.string().nullable(),
  text: z.string(),
  status: messageStatusSchema.meta({
    description: 'outbound: queued → sent → delivered | failed; inbound: received → read',
  }),
  created_at: utc,
});

/** GET /api/v1/messages/{id} and the live stream: the record plus delivery details. */
export const messageDetailSchema = messageRecordSchema.extend({
  node_id: z.string().meta({ description: 'The node at the other end of the conversation.' }),
  updated_at: utc,
  attempts: z.int().optional(),
  failure_code: z
    .string()
    .optional()
    .meta({ description: 'Routing_Error name, ACK_TIMEOUT, or HOLD_EXPIRED (its hold ended first).' }),
  failure_reason: z.string().optional(),
  hold_until: utc.nullable().optional().meta({
    description:
      'Outbound: when its hold ends — a text not through by then fails with HOLD_EXPIRED; null: no hold.',
  }),
  waiting_for_node: z.string().nullable().optional().meta({
    description:
      'Outbound: the node id while the text waits for that node to be heard again (it could not be reached); else null.',
  }),
  site_id: z.string().optional().meta({
    description: 'The upstream: the site that carries the text (its state: GET /api/v1/sites).',
  }),
  next_attempt_at: utc.nullable().optional().meta({
    description:
      'Outbound, while queued: the latest time of its next attempt (sooner when its node is heard); else null.',
  }),
  history: z
    .array(
      z.object({
        status: messageStatusSchema,
        at: utc,
        reason: z.string().optional(),
        attempt: z.int().optional().meta({ description: 'The attempt (1, 2, …) this transition concluded.' }),
        code: z
          .string()
          .optional()
          .meta({ description: 'Why: Routing_Error name, ACK_TIMEOUT or HOLD_EXPIRED.' }),
      }),
    )
    .optional(),
});

export const conversationSummarySchema = z.object({
  node_id: z.string(),
  nickname: z.string(),
  latest_text: z.string(),
  latest_at: utc,
  unread_count: z.int(),
  waiting_count: z.int().meta({
    description: 'Outbound texts still queued: waiting for the radio, or for their node to be heard.',
  }),
  failed_count: z.int().meta({
    description: 'Outbound texts that failed since the node last got a text through or replied.',
  }),
});

export const messageRecordListSchema = z.object({ data: z.array(messageRecordSchema) });
export const messageDetailListSchema = z.object({ data: z.array(messageDetailSchema) });
export const conversationListSchema = z.object({ data: z.array(conversationSummarySchema) });

export const streamTicketSchema = z.object({
  ticket: z.string(),
  expires_in: z.int().meta({ description: 'Seconds; a ticket works once.' }),
});

export type MessageRecordJson = z.output<typeof messageRecordSchema>;
export type MessageDetailJson = z.output<typeof messageDetailSchema>;
export type ConversationSummaryJson = z.output<typeof conversationSummarySchema>;
export type MessageStatus = z.output<typeof messageStatusSchema>;
