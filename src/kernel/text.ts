/**
 * The control-character rule, one copy for every check of text that people or radios send: C0
 * controls (U+0000–U+001F) and DEL (U+007F) are not text. Multi-line text keeps tab and line
 * feed (pasted text carriage return too); a text message also refuses the C1 controls
 * (U+0080–U+009F).
 */

/** A control character in a one-line value (a tag, a name, a filter, a comment's author). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
export const CONTROL_CHAR = /[\u0000-\u001f\u007f]/;

/** A control character in multi-line text: as CONTROL_CHAR, but tab and line feed are text. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
export const CONTROL_CHAR_IN_TEXT = /[\u0000-\u0008\u000b-\u001f\u007f]/;

/** A control character in a text message: as CONTROL_CHAR_IN_TEXT, and the C1 controls too. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
export const CONTROL_CHAR_IN_MESSAGE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

/**
 * A control character in pasted text (a question): tab, line feed and carriage return are text;
 * U+FFFD, what a decoder leaves of binary input, is refused with the controls.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters (binary input) is the point
export const CONTROL_CHAR_IN_PASTED_TEXT = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\ufffd]/;
