/**
 * Every language says everything English says: a key missing in a translation (or left over in
 * one after English dropped it), a plural form the language needs (Polish: one, few, many, other),
 * or a `{{placeholder}}` that differs fails here, naming the key. Adding a language is one file
 * in src/web/src/i18n and a line in LANGUAGES; this test tells what it still lacks.
 */
import { describe, expect, it } from 'vitest';
import { CATALOGUES, type Catalogue, LANGUAGES, pickLanguage } from '../../src/web/src/i18n/index.js';

const PLURAL = /_(zero|one|two|few|many|other)$/;

function flatten(catalogue: Catalogue, prefix = ''): Map<string, string> {
  const out = new Map<string, string>();
  for (const [key, value] of Object.entries(catalogue)) {
    if (typeof value === 'string') out.set(prefix + key, value);
    else for (const [k, v] of flatten(value, `${prefix}${key}.`)) out.set(k, v);
  }
  return out;
}

interface Entry {
  /** Plural categories present, or undefined for a plain message. */
  forms?: Set<string>;
  placeholders: Set<string>;
}

/** The catalogue by message: plural forms gathered under their base key. */
function messages(catalogue: Catalogue): Map<string, Entry> {
  const out = new Map<string, Entry>();
  for (const [key, text] of flatten(catalogue)) {
    const form = PLURAL.exec(key)?.[1];
    const base = form ? key.slice(0, -form.length - 1) : key;
    const entry = out.get(base) ?? { placeholders: new Set<string>() };
    if (form) {
      entry.forms ??= new Set();
      entry.forms.add(form);
    }
    for (const match of text.matchAll(/\{\{\s*(\w+)\s*\}\}/g)) entry.placeholders.add(match[1]!);
    out.set(base, entry);
  }
  return out;
}

/** What is wrong with `code`'s catalogue against English, one line per problem. */
function problems(code: string): string[] {
  const locale = LANGUAGES.find((language) => language.code === code)!.locale;
  const needed = new Intl.PluralRules(locale).resolvedOptions().pluralCategories as string[];
  const english = messages(CATALOGUES.en);
  const other = messages(CATALOGUES[code as keyof typeof CATALOGUES]);
  const out: string[] = [];
  for (const [key, entry] of english) {
    const theirs = other.get(key);
    if (!theirs) {
      out.push(`${code}: missing ${key}`);
      continue;
    }
    if (entry.forms) {
      const lacking = needed.filter(
        (form) => !theirs.forms?.has(form) && !(form === 'zero' || form === 'two'),
      );
      if (!theirs.forms) out.push(`${code}: ${key} must be plural (${needed.join(', ')})`);
      else if (lacking.length) out.push(`${code}: ${key} lacks the plural forms ${lacking.join(', ')}`);
    } else if (theirs.forms) out.push(`${code}: ${key} is plural in ${code} but not in English`);
    // A count may go unsaid in a form ("one node"); every other placeholder must be the same.
    const mine = [...entry.placeholders].sort().join(',');
    const their = [...theirs.placeholders].sort().join(',');
    const withoutCount = (list: string) =>
      list
        .split(',')
        .filter((name) => name && name !== 'count')
        .join(',');
    if (withoutCount(mine) !== withoutCount(their))
      out.push(`${code}: ${key} has placeholders {${their}} where English has {${mine}}`);
  }
  for (const key of other.keys()) if (!english.has(key)) out.push(`${code}: ${key} is not in English`);
  return out;
}

describe('the message catalogues', () => {
  it('English names its plural forms one and other', () => {
    const bad = [...messages(CATALOGUES.en)].filter(
      ([, entry]) => entry.forms && !(entry.forms.has('one') && entry.forms.has('other')),
    );
    expect(bad.map(([key]) => key)).toEqual([]);
  });

  for (const { code } of LANGUAGES.filter((language) => language.code !== 'en'))
    it(`${code} has every English message, its plural forms and placeholders`, () => {
      expect(problems(code)).toEqual([]);
    });

  it('fails on a missing key, a missing Polish plural form and a changed placeholder', () => {
    const saved = CATALOGUES.pl;
    const english = flatten(CATALOGUES.en);
    const plural = [...english.keys()].find((key) => key.endsWith('_one'))!.replace(/_one$/, '');
    const withPlaceholder = [...english].find(([key, text]) => !PLURAL.test(key) && /\{\{/.test(text))![0];
    try {
      const broken = structuredClone(saved) as Catalogue;
      const drop = (path: string, value?: string) => {
        const parts = path.split('.');
        let node = broken;
        for (const part of parts.slice(0, -1)) node = node[part] as Catalogue;
        if (value === undefined) delete node[parts.at(-1)!];
        else node[parts.at(-1)!] = value;
      };
      drop(`${plural}_few`);
      drop(withPlaceholder, 'bez zmiennej');
      drop('common.cancel');
      (CATALOGUES as Record<string, Catalogue>).pl = broken;
      const found = problems('pl');
      expect(found).toContain('pl: missing common.cancel');
      expect(found).toContain(`pl: ${plural} lacks the plural forms few`);
      expect(found.some((line) => line.startsWith(`pl: ${withPlaceholder} has placeholders`))).toBe(true);
    } finally {
      (CATALOGUES as Record<string, Catalogue>).pl = saved;
    }
  });
});

describe('the language shown', () => {
  it('is the stored choice, else the first browser language offered, else English', () => {
    expect(pickLanguage('de', ['pl-PL'])).toBe('de');
    expect(pickLanguage(null, ['fr-FR', 'pl-PL', 'en'])).toBe('pl');
    expect(pickLanguage('xx', ['es-MX'])).toBe('es');
    expect(pickLanguage(undefined, ['fr', 'it'])).toBe('en');
  });
});
