/**
 * Sigma's `condition`: selections joined by `and`, `or`, `not` and parentheses (not binds tighter
 * than and, and than or), and `1 of`/`any of`/`all of` a name, a name pattern (`selection*`) or
 * `them` (every selection not starting with `_`). Aggregations (`| count() …`) are refused: we
 * cannot honour them exactly.
 */
import { SigmaRefusal } from './refusal.js';

export type Expr =
  | { kind: 'ref'; name: string }
  | { kind: 'not'; expr: Expr }
  | { kind: 'and' | 'or'; exprs: Expr[] };

const TOKEN = /\s*(\(|\)|[^\s()]+)/y;

export function parseCondition(text: string, names: readonly string[]): Expr {
  if (text.includes('|')) throw new SigmaRefusal('condition: aggregations (`| count()` …) are not supported');
  const tokens: string[] = [];
  let end = 0;
  TOKEN.lastIndex = 0;
  for (let m = TOKEN.exec(text); m; m = TOKEN.exec(text)) {
    tokens.push(m[1]!);
    end = TOKEN.lastIndex;
  }
  if (text.slice(end).trim()) throw new SigmaRefusal(`condition: cannot read "${text}"`);
  let i = 0;
  const peek = () => tokens[i]?.toLowerCase();
  const fail = (what: string): never => {
    throw new SigmaRefusal(`condition: ${what} in "${text}"`);
  };

  const matching = (pattern: string): string[] => {
    if (pattern.toLowerCase() === 'them') return names.filter((n) => !n.startsWith('_'));
    if (!pattern.includes('*')) return names.includes(pattern) ? [pattern] : [];
    const re = new RegExp(`^${pattern.split('*').map(escapeRegex).join('.*')}$`);
    return names.filter((n) => re.test(n));
  };

  const primary = (): Expr => {
    const t = tokens[i];
    if (t === undefined) return fail('unexpected end');
    const lower = t.toLowerCase();
    if (t === '(') {
      i++;
      const e = or();
      if (tokens[i] !== ')') fail('missing )');
      i++;
      return e;
    }
    if (lower === 'not') {
      i++;
      return { kind: 'not', expr: primary() };
    }
    if (lower === '1' || lower === 'any' || lower === 'all') {
      if (tokens[i + 1]?.toLowerCase() !== 'of') fail(`"${t}" must be followed by "of"`);
      const target = tokens[i + 2];
      if (target === undefined || target === '(' || target === ')') return fail(`"${t} of" needs a name`);
      i += 3;
      const found = matching(target);
      if (!found.length) fail(`"${t} of ${target}" matches no selection`);
      return { kind: lower === 'all' ? 'and' : 'or', exprs: found.map((name) => ({ kind: 'ref', name })) };
    }
    if (lower === 'and' || lower === 'or' || lower === 'of' || t === ')') return fail(`unexpected "${t}"`);
    if (/^\d+$/.test(t)) return fail(`"${t} of" is not supported (only 1 of, any of, all of)`);
    if (!names.includes(t)) fail(`unknown selection "${t}"`);
    i++;
    return { kind: 'ref', name: t };
  };
  /** `operand (op operand)*`: `and` over primaries, `or` over ands. */
  const joined = (op: 'and' | 'or', operand: () => Expr) => (): Expr => {
    const exprs = [operand()];
    while (peek() === op) {
      i++;
      exprs.push(operand());
    }
    return exprs.length === 1 ? exprs[0]! : { kind: op, exprs };
  };
  const or = joined('or', joined('and', primary));
  const e = or();
  if (i !== tokens.length) fail(`unexpected "${tokens[i]}"`);
  return e;
}

export function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** The condition as one predicate, built once from the selections' own predicates. */
export function compileExpr<T>(e: Expr, selection: (name: string) => (r: T) => boolean): (r: T) => boolean {
  switch (e.kind) {
    case 'ref':
      return selection(e.name);
    case 'not': {
      const inner = compileExpr(e.expr, selection);
      return (r) => !inner(r);
    }
    case 'and': {
      const parts = e.exprs.map((x) => compileExpr(x, selection));
      return (r) => {
        for (const part of parts) if (!part(r)) return false;
        return true;
      };
    }
    case 'or': {
      const parts = e.exprs.map((x) => compileExpr(x, selection));
      return (r) => {
        for (const part of parts) if (part(r)) return true;
        return false;
      };
    }
  }
}
