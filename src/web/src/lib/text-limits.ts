/**
 * The composer's check of a text against the hub's limits (spec "Outbound message": at most
 * 200 characters; docs/architecture.md "Meshtastic facts": one radio packet, at most 233 bytes of UTF-8), counted exactly as
 * the hub counts them (src/messaging/validation.ts): characters are Unicode code points.
 */
import { t } from '../i18n/index.js';

export const MAX_TEXT_CHARACTERS = 200;
export const MAX_TEXT_BYTES = 233;

// C0 controls but tab and newline, DEL and C1 controls: the hub refuses them.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function characterCount(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/** UTF-8 length without encoding: 1 byte below U+0080, 2 below U+0800, 4 for a surrogate pair, else 3. */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

export interface TextCheck {
  characters: number;
  bytes: number;
  /** Why the hub would refuse it, in plain words; empty when it may be sent. */
  problems: string[];
  /** Nothing to send yet (empty or only spaces): not an error, the button just waits. */
  blank: boolean;
  ok: boolean;
}

export function checkMessageText(text: string): TextCheck {
  const characters = characterCount(text);
  const bytes = utf8Length(text);
  const blank = text.trim() === '';
  const problems: string[] = [];
  if (LONE_SURROGATE.test(text)) problems.push(t('chat.limits.broken'));
  if (CONTROL.test(text)) problems.push(t('chat.limits.control'));
  if (characters > MAX_TEXT_CHARACTERS) {
    problems.push(t('chat.limits.tooLong', { characters, max: MAX_TEXT_CHARACTERS }));
  }
  if (bytes > MAX_TEXT_BYTES) {
    problems.push(t('chat.limits.tooManyBytes', { bytes, max: MAX_TEXT_BYTES }));
  }
  return { characters, bytes, problems, blank, ok: !blank && problems.length === 0 };
}
