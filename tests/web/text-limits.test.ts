/**
 * The composer counts and refuses exactly as the hub does: for any text, the UI's verdict is the
 * hub's verdict (src/messaging/validation.ts), so a refusal is explained before sending and a
 * text the UI lets through is never refused for its length.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { characterCount, messageTextSchema, utf8Length } from '../../src/messaging/validation.js';
import {
  checkMessageText,
  utf8Length as uiBytes,
  characterCount as uiCharacters,
} from '../../src/web/src/lib/text-limits.js';

// Lengths spread evenly up to past both limits (size: 'max'), and pieces of every UTF-8 width,
// the allowed and refused control characters, and halves of surrogate pairs.
const pieces = fc.constantFrom(
  'a',
  ' ',
  'é',
  '€',
  '🍂',
  '\n',
  '\t',
  '\u0007',
  '\u007f',
  '\u0085',
  '\uD800',
  '\uDC00',
);
const texts = fc.oneof(
  fc.string({ unit: pieces, maxLength: 240, size: 'max' }),
  fc
    .tuple(fc.integer({ min: 150, max: 240 }), fc.string({ unit: pieces, maxLength: 20 }))
    .map(([n, tail]) => 'x'.repeat(n) + tail),
  fc
    .tuple(fc.integer({ min: 50, max: 62 }), fc.string({ unit: pieces, maxLength: 6 }))
    .map(([n, tail]) => '🍂'.repeat(n) + tail),
  // Exactly around the byte limit (and the character limit, below).
  fc
    .integer({ min: 226, max: 240 })
    .map((bytes) => '🍂'.repeat(Math.floor(bytes / 4)) + 'y'.repeat(bytes % 4)),
  fc.integer({ min: 196, max: 204 }).map((n) => 'z'.repeat(n)),
  fc.string({ unit: 'grapheme', maxLength: 260 }),
  fc.string({ unit: 'binary', maxLength: 260 }),
);

describe('the composer’s text check', () => {
  it('counts characters and UTF-8 bytes exactly as the hub does (property)', () => {
    fc.assert(
      fc.property(texts, (text) => {
        expect(uiCharacters(text)).toBe(characterCount(text));
        expect(uiBytes(text)).toBe(utf8Length(text));
      }),
      { numRuns: 2000 },
    );
  });

  it('accepts exactly the texts the hub accepts (property)', () => {
    fc.assert(
      fc.property(texts, (text) => {
        expect(checkMessageText(text).ok).toBe(messageTextSchema.safeParse(text).success);
      }),
      { numRuns: 2000 },
    );
  });

  it('explains each refusal in plain words', () => {
    expect(checkMessageText('a'.repeat(200))).toMatchObject({
      ok: true,
      characters: 200,
      bytes: 200,
      problems: [],
    });
    expect(checkMessageText('a'.repeat(201)).problems).toEqual(['Too long: 201 of at most 200 characters.']);
    // 60 emoji: 60 characters but 240 bytes, more than one radio packet.
    const leaves = '🍂'.repeat(60);
    expect(checkMessageText(leaves)).toMatchObject({ ok: false, characters: 60, bytes: 240 });
    expect(checkMessageText(leaves).problems[0]).toMatch(
      /^Too long for one radio packet: 240 of at most 233 bytes/,
    );
    expect(checkMessageText('bell\u0007').problems[0]).toMatch(/control characters/);
    expect(checkMessageText('   ')).toMatchObject({ ok: false, blank: true, problems: [] });
  });
});
