/**
 * One Sigma rule (a parsed YAML document) → a predicate over the stored record, or a
 * SigmaRefusal saying what we cannot honour exactly (README "Sigma detections"). Compiled once:
 * sets and lower-cased needles for plain values, `*`-segments for wildcards (no pattern engine),
 * a RegExp only for `re` and for `?` wildcards.
 *
 * Supported: maps (and of fields), lists (or of values; `|all`: and), lists of maps (or),
 * keyword lists (any string in the record contains the keyword), `null` (absent or null);
 * modifiers contains, startswith, endswith, all, re (with i, m, s), cidr, exists, cased,
 * base64, gt, gte, lt, lte. Plain values match case-insensitively, with `*` and `?` wildcards
 * (`\*`, `\?`, `\\` are literal).
 */
import { BlockList, isIP } from 'node:net';
import { CONTROL_CHAR } from '../../../src/kernel/text.js';
import type { Severity } from '../alerts/schemas.js';
import { compileExpr, type Expr, escapeRegex, parseCondition } from './condition.js';
import {
  allLeaves,
  type FieldPath,
  fieldPath,
  type Leaf,
  LOG_SOURCES,
  OPERATION_FIELD,
  type SigmaProduct,
  valuesAt,
} from './fields.js';
import { SigmaRefusal } from './refusal.js';

export interface CompiledSigmaRule {
  title: string;
  /** The rule's `id` (a UUID in SigmaHQ rules), when it has one. */
  id: string | null;
  description: string;
  severity: Severity;
  /** Our sources (sources.ts) whose events the rule looks at. */
  sources: ReadonlySet<string>;
  product: SigmaProduct;
  /** Matches the upstream record the store keeps with the event. */
  matches(record: unknown): boolean;
  /**
   * The operations (lower-cased) one of which every record the rule matches carries in its
   * operation field (OPERATION_FIELD: `Operation`, `activityDisplayName`); undefined when the
   * detection does not pin it. The alert engine meets the rule only with those events.
   */
  operations: ReadonlySet<string> | undefined;
}

type Test = (record: unknown) => boolean;
/** A test, and the folded operations it requires (see CompiledSigmaRule.operations). */
interface Pinned {
  test: Test;
  operations?: ReadonlySet<string> | undefined;
}

const LEVELS: Record<string, Severity> = {
  informational: 'info',
  low: 'low',
  medium: 'medium',
  high: 'high',
  critical: 'critical',
};

/** Modifiers Sigma defines that we cannot apply exactly: refused by name. */
const REFUSED_MODIFIERS = new Set([
  'windash',
  'base64offset',
  'wide',
  'utf16',
  'utf16le',
  'utf16be',
  'expand',
  'fieldref',
  'neq',
]);
const SUPPORTED_MODIFIERS = new Set([
  'contains',
  'startswith',
  'endswith',
  'all',
  're',
  'i',
  'm',
  's',
  'cidr',
  'exists',
  'cased',
  'base64',
  'gt',
  'gte',
  'lt',
  'lte',
]);
/** A group followed by a quantifier, holding one itself: `(a+)+`, `(\w*)*`: may backtrack without end. */
const NESTED_QUANTIFIER = /\((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*\)\s*[+*{]/;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A field's values in one record, and their texts lower-cased (undefined: not a text). */
interface FieldValues {
  values: Leaf[];
  folded: Array<string | undefined>;
  present: boolean;
}

/**
 * What the rules read of the record being evaluated, computed once whatever the number of rules
 * reading it: every rule meets one record before the next comes (the engine evaluates an event
 * against all its rules), so only the last record's values are kept (no per-record allocation
 * beyond them, nothing for the collector to trace).
 */
const current: {
  record: unknown;
  fields: Array<FieldValues | undefined>;
  leaves: string[] | undefined;
  joined: string | undefined;
} = {
  record: undefined,
  fields: [],
  leaves: undefined,
  joined: undefined,
};
/** Field path → its slot in current.fields, assigned as rules are compiled. */
const slots = new Map<string, number>();

function slotOf(path: FieldPath): number {
  const key = path.join('.');
  let slot = slots.get(key);
  if (slot === undefined) {
    slot = slots.size;
    slots.set(key, slot);
  }
  return slot;
}

function meet(record: unknown): typeof current {
  if (current.record !== record) {
    current.record = record;
    current.fields = [];
    current.leaves = undefined;
    current.joined = undefined;
  }
  return current;
}

/** Every string of the record, lower-cased (keyword searches look at all of them). */
function foldedLeaves(record: unknown): string[] {
  if (typeof record !== 'object' || record === null) return [];
  const c = meet(record);
  c.leaves ??= allLeaves(record).map((s) => s.toLowerCase());
  return c.leaves;
}

/**
 * The folded leaves joined by NUL: a keyword without wildcards or NUL is in some leaf exactly
 * when it is in this string (a match cannot span the separator), so one search replaces many.
 */
function joinedLeaves(record: unknown): string {
  const c = meet(record);
  c.joined ??= foldedLeaves(record).join('\0');
  return c.joined;
}

/** valuesAt, with the texts lower-cased, once per record and field. */
function fieldValues(record: unknown, path: FieldPath, slot: number): FieldValues {
  const c = meet(record);
  let out = c.fields[slot];
  if (!out) {
    const { values, present } = valuesAt(record, path);
    out = { values, present, folded: values.map((v) => asText(v)?.toLowerCase()) };
    c.fields[slot] = out;
  }
  return out;
}

/** The record's operations (OPERATION_FIELD), lower-cased: what CompiledSigmaRule.operations names. */
export function recordOperations(product: SigmaProduct, record: unknown): string[] {
  return fieldValues(record, OPERATION_FIELD[product], OPERATION_SLOT[product]).folded.filter(
    (v) => v !== undefined,
  );
}
const OPERATION_SLOT: Record<SigmaProduct, number> = {
  m365: slotOf(OPERATION_FIELD.m365),
  azure: slotOf(OPERATION_FIELD.azure),
};

/** A Sigma string with wildcards → a test on one string (already folded unless `cased`). */
function stringTest(pattern: string, cased: boolean): (v: string) => boolean {
  return stringMatcher(pattern, cased).test;
}

/** stringTest, and the one (folded) string it accepts when the pattern has no wildcard. */
function stringMatcher(pattern: string, cased: boolean): { test: (v: string) => boolean; exact?: string } {
  const parts: Array<{ text: string } | '*' | '?'> = [];
  let text = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    const next = pattern[i + 1];
    if (ch === '\\' && (next === '*' || next === '?' || next === '\\')) {
      text += next;
      i++;
    } else if (ch === '*' || ch === '?') {
      if (text) parts.push({ text });
      text = '';
      parts.push(ch);
    } else text += ch;
  }
  if (text) parts.push({ text });
  const fold = (s: string) => (cased ? s : s.toLowerCase());
  if (parts.includes('?')) {
    const source = parts
      .map((part) => (part === '*' ? '[\\s\\S]*' : part === '?' ? '[\\s\\S]' : escapeRegex(part.text)))
      .join('');
    const re = new RegExp(`^${source}$`, cased ? '' : 'i');
    return { test: (v) => re.test(v) };
  }
  if (!parts.includes('*')) {
    const whole = fold(parts.map((part) => (part as { text: string }).text).join(''));
    const exact = parts
      .map((part) => (part as { text: string }).text)
      .join('')
      .toLowerCase();
    return { test: (v) => v === whole, exact };
  }
  // Only `*`: the first piece is a prefix, the last a suffix, the rest found in order between them.
  const pieces: string[] = [''];
  for (const part of parts) {
    if (part === '*') pieces.push('');
    else pieces[pieces.length - 1] += fold((part as { text: string }).text);
  }
  const head = pieces[0]!;
  const tail = pieces[pieces.length - 1]!;
  const middle = pieces.slice(1, -1).filter(Boolean);
  // contains, startswith, endswith: one string method.
  if (!middle.length && !tail) return { test: (v) => v.startsWith(head) };
  if (!middle.length && !head) return { test: (v) => v.endsWith(tail) };
  if (middle.length === 1 && !head && !tail) {
    const piece = middle[0]!;
    return { test: (v) => v.includes(piece) };
  }
  const test = (v: string) => {
    if (v.length < head.length + tail.length || !v.startsWith(head) || !v.endsWith(tail)) return false;
    let at = head.length;
    const end = v.length - tail.length;
    for (const piece of middle) {
      const found = v.indexOf(piece, at);
      if (found < 0 || found + piece.length > end) return false;
      at = found + piece.length;
    }
    return true;
  };
  return { test };
}

const asText = (v: Leaf): string | undefined =>
  typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined;

function fieldTest(key: string, raw: unknown, product: SigmaProduct): Pinned {
  const [field = '', ...mods] = key.split('|');
  if (!field) throw new SigmaRefusal(`"${key}": a modifier without a field is not supported`);
  const path = fieldPath(product, field);
  if (!path) throw new SigmaRefusal(`field "${field}" is not one we can map for ${product}`);
  for (const mod of mods) {
    if (REFUSED_MODIFIERS.has(mod) || !SUPPORTED_MODIFIERS.has(mod))
      throw new SigmaRefusal(`"${key}": the modifier "${mod}" is not supported`);
  }
  const has = (m: string) => mods.includes(m);
  const list = Array.isArray(raw) ? raw : [raw];
  if (!list.length) throw new SigmaRefusal(`"${key}": an empty list of values`);
  for (const v of list) {
    if (v !== null && typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean')
      throw new SigmaRefusal(`"${key}": values must be strings, numbers, booleans or null`);
  }
  const only = (allowed: string[], what: string) => {
    const extra = mods.filter((m) => !allowed.includes(m));
    if (extra.length)
      throw new SigmaRefusal(`"${key}": ${what} cannot be combined with "${extra.join('|')}"`);
  };
  const slot = slotOf(path);
  const at = (record: unknown) => fieldValues(record, path, slot);

  if (has('exists')) {
    only(['exists'], 'exists');
    if (list.length !== 1 || typeof list[0] !== 'boolean')
      throw new SigmaRefusal(`"${key}": exists takes true or false`);
    const want = list[0];
    return { test: (r) => at(r).present === want };
  }

  /** Tests on one value of the field, and its text lower-cased (FieldValues.folded). */
  let tests: Array<(v: Leaf, folded: string | undefined) => boolean>;
  // Plain values on the operation field, without wildcards: the rule is pinned to them.
  let exact: Set<string> | undefined =
    path.join('.') === OPERATION_FIELD[product].join('.') && mods.every((m) => m === 'cased')
      ? new Set()
      : undefined;
  if (has('re')) {
    only(['re', 'i', 'm', 's', 'all'], 're');
    const flags = ['i', 'm', 's'].filter(has).join('');
    tests = list.map((v) => {
      if (typeof v !== 'string') throw new SigmaRefusal(`"${key}": re takes a string`);
      if (NESTED_QUANTIFIER.test(v))
        throw new SigmaRefusal(`"${key}": the pattern nests quantifiers (may never finish on some input)`);
      let re: RegExp;
      try {
        re = new RegExp(v, flags);
      } catch {
        throw new SigmaRefusal(`"${key}": "${v}" is not a valid regular expression`);
      }
      return (leaf: Leaf) => {
        const s = asText(leaf);
        return s !== undefined && re.test(s);
      };
    });
  } else if (has('cidr')) {
    only(['cidr'], 'cidr');
    const blocks = new BlockList();
    for (const v of list) {
      const m = typeof v === 'string' ? /^(.+)\/(\d{1,3})$/.exec(v) : null;
      const family = m ? isIP(m[1]!) : 0;
      const bits = m ? Number(m[2]) : -1;
      if (!m || !family || bits > (family === 4 ? 32 : 128))
        throw new SigmaRefusal(`"${key}": "${String(v)}" is not a CIDR range`);
      blocks.addSubnet(m[1]!, bits, family === 4 ? 'ipv4' : 'ipv6');
    }
    tests = [
      (leaf) => {
        const ip = typeof leaf === 'string' ? leaf.trim() : '';
        const family = isIP(ip);
        return family !== 0 && blocks.check(ip, family === 4 ? 'ipv4' : 'ipv6');
      },
    ];
  } else if (mods.some((m) => ['gt', 'gte', 'lt', 'lte'].includes(m))) {
    if (mods.length !== 1) throw new SigmaRefusal(`"${key}": ${mods[0]} stands alone`);
    const op = mods[0]!;
    tests = list.map((v) => {
      if (typeof v !== 'number') throw new SigmaRefusal(`"${key}": ${op} takes a number`);
      return (leaf: Leaf) => {
        const n =
          typeof leaf === 'number' ? leaf : typeof leaf === 'string' && leaf.trim() ? Number(leaf) : NaN;
        if (Number.isNaN(n)) return false;
        return op === 'gt' ? n > v : op === 'gte' ? n >= v : op === 'lt' ? n < v : n <= v;
      };
    });
  } else {
    if (mods.some((m) => ['i', 'm', 's'].includes(m)))
      throw new SigmaRefusal(`"${key}": i, m and s go with re only`);
    const cased = has('cased');
    const wrap = (s: string) =>
      `${has('contains') || has('endswith') ? '*' : ''}${s}${has('contains') || has('startswith') ? '*' : ''}`;
    tests = list.map((v) => {
      if (v === null) {
        if (mods.length) throw new SigmaRefusal(`"${key}": null takes no modifiers`);
        exact = undefined;
        return NULL_MARK;
      }
      let s = String(v);
      if (has('base64')) {
        if (/[*?]/.test(s)) throw new SigmaRefusal(`"${key}": base64 of a value with wildcards`);
        s = Buffer.from(s, 'utf8').toString('base64');
      }
      const m = stringMatcher(wrap(s), cased);
      const t = m.test;
      if (m.exact === undefined) exact = undefined;
      else exact?.add(m.exact);
      if (cased)
        return (leaf: Leaf) => {
          const text = asText(leaf);
          return text !== undefined && t(text);
        };
      return (_leaf: Leaf, folded: string | undefined) => folded !== undefined && t(folded);
    });
  }

  const one = (test: (v: Leaf, folded: string | undefined) => boolean): Test =>
    test === NULL_MARK
      ? (r) => at(r).values.every((v) => v === null)
      : (r) => {
          const { values, folded } = at(r);
          for (let i = 0; i < values.length; i++) if (test(values[i]!, folded[i])) return true;
          return false;
        };
  const each = tests.map(one);
  if (has('all')) return { test: (r) => each.every((t) => t(r)) };
  return { test: each.length === 1 ? each[0]! : (r) => each.some((t) => t(r)), operations: exact };
}

/** Stands for `null` among a field's values: absent, or null everywhere. */
const NULL_MARK = (_v: Leaf) => false;

/** Operations every one of `pins` requires (an or): their union, or undefined when one pins none. */
function union(pins: ReadonlyArray<ReadonlySet<string> | undefined>): ReadonlySet<string> | undefined {
  if (!pins.length || pins.some((p) => p === undefined)) return undefined;
  return new Set(pins.flatMap((p) => [...p!]));
}

/** The operations a condition requires: `and` takes any pinned operand, `or` needs all, `not` none. */
function pinnedBy(e: Expr, selections: ReadonlyMap<string, Pinned>): ReadonlySet<string> | undefined {
  switch (e.kind) {
    case 'ref':
      return selections.get(e.name)?.operations;
    case 'not':
      return undefined;
    case 'and':
      return e.exprs.map((x) => pinnedBy(x, selections)).find((p) => p !== undefined);
    case 'or':
      return union(e.exprs.map((x) => pinnedBy(x, selections)));
  }
}

function selectionTest(name: string, body: unknown, product: SigmaProduct): Pinned {
  const mapTest = (map: Record<string, unknown>): Pinned => {
    const entries = Object.entries(map);
    if (!entries.length) throw new SigmaRefusal(`selection "${name}" is empty`);
    const fields = entries.map(([key, value]) => fieldTest(key, value, product));
    const tests = fields.map((f) => f.test);
    return {
      test: (r) => tests.every((t) => t(r)),
      operations: fields.find((f) => f.operations)?.operations,
    };
  };
  if (isObject(body)) return mapTest(body);
  const list = Array.isArray(body) ? body : [body];
  if (!list.length) throw new SigmaRefusal(`selection "${name}" is empty`);
  if (list.every(isObject)) {
    const maps = list.map(mapTest);
    const tests = maps.map((m) => m.test);
    return { test: (r) => tests.some((t) => t(r)), operations: union(maps.map((m) => m.operations)) };
  }
  if (list.every((v) => typeof v === 'string' || typeof v === 'number')) {
    // Keywords: any string of the record contains one of them (case-insensitive, wildcards kept).
    const tests = list.map((v) => stringTest(`*${String(v)}*`, false));
    const plain = list.map(String);
    if (plain.every((k) => k && !/[*?\\\0]/.test(k))) {
      const needles = plain.map((k) => k.toLowerCase());
      return {
        test: (r) => {
          if (typeof r !== 'object' || r === null) return false;
          const all = joinedLeaves(r);
          return needles.some((k) => all.includes(k));
        },
      };
    }
    return {
      test: (r) => {
        const all = foldedLeaves(r);
        return tests.some((t) => all.some(t));
      },
    };
  }
  throw new SigmaRefusal(`selection "${name}" mixes maps and keywords, or holds something else`);
}

const str = (v: unknown) => (typeof v === 'string' && v.trim() ? v.trim() : undefined);

/** Compiles one rule document; throws SigmaRefusal with the reason it cannot run. */
export function compileSigmaRule(doc: unknown): CompiledSigmaRule {
  if (!isObject(doc))
    throw new SigmaRefusal('not a Sigma rule (a YAML mapping with title, logsource, detection)');
  if (doc.action !== undefined)
    throw new SigmaRefusal('rule collections (action: global …) are not supported');
  if (doc.correlation !== undefined) throw new SigmaRefusal('correlation rules are not supported');
  const title = str(doc.title);
  if (!title) throw new SigmaRefusal('the rule has no title');
  if (CONTROL_CHAR.test(title)) throw new SigmaRefusal('the title holds control characters');
  if (doc.status === 'unsupported') throw new SigmaRefusal('the rule says status: unsupported');
  const logsource = doc.logsource;
  if (!isObject(logsource)) throw new SigmaRefusal('the rule has no logsource');
  if (logsource.category !== undefined)
    throw new SigmaRefusal(`logsource category "${String(logsource.category)}" is not collected`);
  const product = str(logsource.product)?.toLowerCase();
  const service = str(logsource.service)?.toLowerCase();
  if (product !== 'm365' && product !== 'azure')
    throw new SigmaRefusal(
      `logsource product "${product ?? '(none)'}" is not collected (m365 and azure are)`,
    );
  const placed = Object.hasOwn(LOG_SOURCES, `${product}/${service}`)
    ? LOG_SOURCES[`${product}/${service}`]
    : undefined;
  if (!placed) throw new SigmaRefusal(`logsource ${product}/${service ?? '(no service)'} is not collected`);
  if ('refused' in placed) throw new SigmaRefusal(`logsource ${product}/${service}: ${placed.refused}`);
  const detection = doc.detection;
  if (!isObject(detection)) throw new SigmaRefusal('the rule has no detection');
  if (detection.timeframe !== undefined)
    throw new SigmaRefusal('detection timeframe (an aggregation window) is not supported');
  const names = Object.keys(detection).filter((k) => k !== 'condition');
  if (!names.length) throw new SigmaRefusal('the detection has no selection');
  const selections = new Map(names.map((n) => [n, selectionTest(n, detection[n], product)]));
  const tests = new Map<string, Test>([...selections].map(([n, s]) => [n, s.test]));
  const conditions = Array.isArray(detection.condition) ? detection.condition : [detection.condition];
  if (!conditions.length || !conditions.every((c) => typeof c === 'string' && c.trim()))
    throw new SigmaRefusal('the detection has no condition');
  const parsed = conditions.map((c) => parseCondition(c as string, names));
  const expr = parsed.length === 1 ? parsed[0]! : { kind: 'or' as const, exprs: parsed };
  const level = str(doc.level)?.toLowerCase();
  const severity = level === undefined ? 'medium' : LEVELS[level];
  if (!severity) throw new SigmaRefusal(`level "${level}" is not a Sigma level`);
  return {
    title,
    id: str(doc.id) ?? null,
    description: str(doc.description) ?? '',
    severity,
    sources: new Set(placed.sources),
    product,
    matches: compileExpr(expr, (name) => tests.get(name)!),
    operations: pinnedBy(expr, selections),
  };
}
