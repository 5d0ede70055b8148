/**
 * The outbound message body: text limits in characters and in UTF-8 bytes, each named, as a
 * property over arbitrary text; and the message events for MQTT (the rate limiter's tests are
 * tests/kernel/rate-limit.test.ts).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { messageEventPayload, messageEventTopic } from '../../src/messaging/mqtt-events.js';
import { outboundMessageSchema } from '../../src/messaging/validation.js';

describe('outboundMessageSchema', () => {
  it('property: accepts text iff non-blank, plain, ≤ 200 characters and ≤ 233 UTF-8 bytes', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 260, unit: 'grapheme' }),
          fc.string({ maxLength: 260, unit: 'binary' }),
        ),
        (text) => {
          const result = outboundMessageSchema.safeParse({ target_node_id: '!a1b2c3d4', text });
          const chars = [...text].length;
          const bytes = Buffer.byteLength(text);
          // biome-ignore lint/suspicious/noControlCharactersInRegex: the rule under test
          const plain = !/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.test(text);
          const ok = text.trim() !== '' && plain && chars <= 200 && bytes <= 233;
          expect(result.success).toBe(ok);
          if (!result.success) {
            const messages = result.error.issues.map((i) => i.message);
            expect(messages.some((m) => m.includes('200 characters'))).toBe(chars > 200);
            expect(messages.some((m) => m.includes('233 bytes'))).toBe(bytes > 233);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('refuses a lone surrogate (it has no UTF-8 form)', () => {
    const result = outboundMessageSchema.safeParse({ target_node_id: '!a1b2c3d4', text: 'ok \ud800' });
    expect(result.success).toBe(false);
  });
});

describe('message events for MQTT', () => {
  const message = {
    rowId: 1,
    id: '3f1c6a2e-0000-4000-8000-000000000000',
    owner: 'idp:team/a+b#c',
    ownerName: 'Jo',
    nodeId: '!a1b2c3d4',
    direction: 'outbound',
    senderNodeId: '!0f0f0f0f',
    targetNodeId: '!a1b2c3d4',
    text: 'hi',
    status: 'sent',
    failureCode: null,
    failureReason: null,
    packetId: 7,
    attempts: 1,
    ackDeadline: null,
    nextAttemptAt: 0,
    createdAt: 0,
    updatedAt: 1000,
  } as const;

  it('puts each subscriber under its own topic level, escaping what would break the topic tree', () => {
    expect(messageEventTopic({ message: { ...message }, kind: 'status' })).toBe(
      'meshhub/messages/idp:team%2Fa%2Bb%23c/!a1b2c3d4',
    );
    expect(messageEventTopic({ message: { ...message, owner: null }, kind: 'created' })).toBe(
      'meshhub/messages/_unmatched/!a1b2c3d4',
    );
    expect(JSON.parse(messageEventPayload({ message: { ...message }, kind: 'status' }))).toMatchObject({
      event: 'status',
      subscriber: 'idp:team/a+b#c',
      message: {
        id: message.id,
        status: 'sent',
        node_id: '!a1b2c3d4',
        updated_at: '1970-01-01T00:00:01.000Z',
      },
    });
  });
});
