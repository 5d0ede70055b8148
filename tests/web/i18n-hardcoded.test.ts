/**
 * No words are left hard-coded in the web UI's views: every .tsx file under src/web/src is read
 * with the TypeScript compiler, and JSX text with letters, or a string written straight into a
 * user-visible attribute (title, placeholder, aria-label, alt, label), fails the test unless it is
 * on the short list below. Words go through `t()` (src/web/src/i18n).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(process.cwd(), 'src/web/src');

/** Words every language writes the same: the product, the radio system, units and symbols. */
const ALLOWED = new Set([
  'meshhub',
  'Meshtastic',
  'LoRa',
  'MQTT',
  'SNR',
  'RSSI',
  'CSV',
  'JSON',
  'hPa',
  'dB',
  'dBm',
]);
/** A node id as an example (`!0000beef`) is the same in every language. */
const NODE_ID = /^![0-9a-f]{8}$/;

const ATTRIBUTES = new Set([
  'title',
  'placeholder',
  'aria-label',
  'alt',
  'label',
  'legend',
  'caption',
  'heading',
  'intro',
  'data-label',
]);

function tsxFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return tsxFiles(path);
    return entry.name.endsWith('.tsx') ? [path] : [];
  });
}

const hasWords = (text: string) =>
  /\p{L}{2,}/u.test(text) && !ALLOWED.has(text.trim()) && !NODE_ID.test(text.trim());

/** Inside `<code>` is a command or a setting, written as typed in every language. */
const inCode = (node: ts.Node) =>
  ts.isJsxElement(node.parent) && node.parent.openingElement.tagName.getText() === 'code';

/** `file:line "text"` for every hard-coded user-visible string in the source. */
function hardCoded(file: string, source: string): string[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TSX);
  const found: string[] = [];
  const report = (node: ts.Node, text: string) => {
    const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
    found.push(`${file}:${line} ${JSON.stringify(text.trim())}`);
  };
  const visit = (node: ts.Node) => {
    if (ts.isJsxText(node) && hasWords(node.text) && !inCode(node)) report(node, node.text);
    if (ts.isJsxAttribute(node) && ATTRIBUTES.has(node.name.getText(sf)) && node.initializer) {
      const init = node.initializer;
      const literal = ts.isStringLiteral(init)
        ? init
        : ts.isJsxExpression(init) && init.expression && ts.isStringLiteralLike(init.expression)
          ? init.expression
          : undefined;
      if (literal && hasWords(literal.text)) report(literal, literal.text);
    }
    // `{'Loading…'}` written as a child
    if (ts.isJsxExpression(node) && node.expression && ts.isStringLiteralLike(node.expression)) {
      const parent = node.parent;
      if ((ts.isJsxElement(parent) || ts.isJsxFragment(parent)) && hasWords(node.expression.text))
        report(node, node.expression.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

describe('hard-coded words in the web UI', () => {
  it('every .tsx view takes its words from the catalogue', () => {
    const found = tsxFiles(ROOT)
      .map((path) => relative(ROOT, path))
      .flatMap((file) => hardCoded(file, readFileSync(join(ROOT, file), 'utf8')));
    expect(found).toEqual([]);
  });

  it('finds JSX text and words in user-visible attributes, not class names or units', () => {
    const source = `export const A = () => (
      <p class="notice" data-testid="x" title="Radio link">Hello there <b>{'Loading'}</b> hPa
        <input placeholder={'Search nodes'} aria-label={label} /></p>
    );`;
    expect(hardCoded('a.tsx', source)).toEqual([
      'a.tsx:2 "Radio link"',
      'a.tsx:2 "Hello there"',
      'a.tsx:2 "Loading"',
      'a.tsx:3 "Search nodes"',
    ]);
  });
});
