/**
 * The messaging schemas the API document shows (src/messaging/schemas.ts) and the hand-written
 * checks the routes run on headers and path parameters (validation.ts) accept the same values.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ProblemError } from '../../src/http/problem.js';
import { idempotencyHeaderSchema, nodeIdPathSchema } from '../../src/messaging/schemas.js';
import { parseIdempotencyKey, parseNodeIdParam } from '../../src/messaging/validation.js';

function accepts(check: () => unknown): boolean {
  try {
    check();
    return true;
  } catch (error) {
    if (error instanceof ProblemError && error.status === 400) return false;
    throw error;
  }
}

const keySchema = idempotencyHeaderSchema.shape['Idempotency-Key'];
const KEYS = [
  'abc',
  '"abc"',
  '"',
  '""',
  '"a',
  'a"',
  'a b',
  '',
  'x'.repeat(255),
  'x'.repeat(256),
  `"${'x'.repeat(255)}"`,
  'é',
];

describe('Idempotency-Key: header schema and parseIdempotencyKey', () => {
  it.each(KEYS)('agree on %j', (key) => {
    expect(keySchema.safeParse(key).success).toBe(accepts(() => parseIdempotencyKey(key)));
  });

  it('agree on generated keys (property)', () => {
    const key = fc.oneof(
      fc.string({ unit: fc.constantFrom('"', 'a', ' ', '~', '\u007f'), maxLength: 6 }),
      fc.string({ maxLength: 300 }),
    );
    fc.assert(
      fc.property(key, (k) => {
        expect(keySchema.safeParse(k).success).toBe(accepts(() => parseIdempotencyKey(k)));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('node_id path parameter: schema and parseNodeIdParam', () => {
  it.each(['!a1b2c3d4', '!ffffffff', '!A1B2C3D4', 'a1b2c3d4', '!a1b2c3d', '!a1b2c3d45', ''])(
    'agree on %j',
    (id) => {
      expect(nodeIdPathSchema.shape.node_id.safeParse(id).success).toBe(accepts(() => parseNodeIdParam(id)));
    },
  );
});
