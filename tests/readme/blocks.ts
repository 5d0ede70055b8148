/**
 * The README's shell blocks, as the README test (readme.test.ts) runs them: every ```sh and
 * ```bash fence, with its section and the `<!-- readme-test: … -->` comment just before it:
 *
 * - `skip (why)`: the block cannot run here (a radio, root and systemd, the internet, …); the
 *   test lists it with the reason;
 * - `after #anchor`: run it after the blocks of that section (it uses what they made);
 * - `needs postgresql`: run it against a scratch PostgreSQL schema (UPSTREAM_DATABASE_URL).
 */

export interface ReadmeBlock {
  /** 1-based line of the opening fence. */
  line: number;
  /** The section's heading, and its GitHub anchor (`#your-first-message-step-by-step`). */
  heading: string;
  anchor: string;
  /** The commands, with the fence's indentation removed. */
  code: string;
  skip?: string;
  after?: string;
  needsPostgres: boolean;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
export function anchorOf(heading: string): string {
  return `#${heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')}`;
}

const FENCE = /^(\s*)```(\w*)\s*$/;
const DIRECTIVE = /^\s*<!--\s*readme-test:\s*(.*?)\s*-->\s*$/;

export function readmeBlocks(markdown: string): ReadmeBlock[] {
  const lines = markdown.split('\n');
  const blocks: ReadmeBlock[] = [];
  let heading = '';
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) {
      const h = /^#{1,6}\s+(.*)$/.exec(lines[i]!);
      if (h) heading = h[1]!;
      continue;
    }
    const indent = open[1]!.length;
    const lang = open[2]!;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]!); i++) body.push(lines[i]!.slice(indent));
    if (lang !== 'sh' && lang !== 'bash') continue;
    let before = start - 1;
    while (before >= 0 && lines[before]!.trim() === '') before--;
    const directive = before >= 0 ? DIRECTIVE.exec(lines[before]!)?.[1] : undefined;
    const block: ReadmeBlock = {
      line: start + 1,
      heading,
      anchor: anchorOf(heading),
      code: body.join('\n'),
      needsPostgres: false,
    };
    if (directive) {
      const skip = /^skip\s*\((.*)\)$/.exec(directive);
      const after = /^after\s+(#\S+)$/.exec(directive);
      if (skip) block.skip = skip[1]!;
      else if (after) block.after = after[1]!;
      else if (directive === 'needs postgresql') block.needsPostgres = true;
      else throw new Error(`README.md line ${before + 1}: unknown readme-test directive "${directive}"`);
    }
    blocks.push(block);
  }
  return blocks;
}

/**
 * The blocks to run, in README order, except that a block marked `after #anchor` runs right
 * after the last block of that section.
 */
export function runOrder(blocks: readonly ReadmeBlock[]): ReadmeBlock[] {
  const order = blocks.filter((b) => !b.skip && !b.after);
  for (const b of blocks.filter((x) => !x.skip && x.after)) {
    const last = order.findLastIndex((x) => x.anchor === b.after);
    if (last < 0) throw new Error(`README.md line ${b.line}: no block runs in section ${b.after}`);
    order.splice(last + 1, 0, b);
  }
  return order;
}

/**
 * What a `# → {…}` comment after a command says its answer holds: the `"key":value` pairs whose
 * value is written out (a string without `…`, a number, true, false or null), with the index of
 * the curl call the comment follows (0 = the block's first).
 */
export function expectations(code: string): Array<{ call: number; pairs: Array<[string, unknown]> }> {
  const out: Array<{ call: number; pairs: Array<[string, unknown]> }> = [];
  let calls = 0;
  for (const line of code.split('\n')) {
    const comment = /^\s*#\s*→\s*(\{.*)$/.exec(line);
    if (comment) {
      const pairs: Array<[string, unknown]> = [];
      for (const m of comment[1]!.matchAll(
        /"(\w+)":("(?:[^"\\…]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null)(?=[,}\]])/g,
      )) {
        pairs.push([m[1]!, JSON.parse(m[2]!)]);
      }
      if (pairs.length > 0 && calls > 0) out.push({ call: calls - 1, pairs });
      continue;
    }
    if (/^\s*#/.test(line)) continue;
    calls += [...line.matchAll(/(?:^|[\s($|])curl\s/g)].length;
  }
  return out;
}

/** Whether `value` (a parsed JSON answer) holds an object with `key` equal to `expected`. */
export function holdsPair(value: unknown, key: string, expected: unknown): boolean {
  if (Array.isArray(value)) return value.some((v) => holdsPair(v, key, expected));
  if (value === null || typeof value !== 'object') return false;
  const record = value as Record<string, unknown>;
  if (key in record && record[key] === expected) return true;
  return Object.values(record).some((v) => holdsPair(v, key, expected));
}
