/**
 * The UI's languages: one message catalogue per language (en.ts is the source; de.ts, es.ts and
 * pl.ts follow its keys, tests/web/i18n-catalogue.test.ts tells what is missing), picked from the
 * browser's languages unless the person chose one in the header (kept in localStorage).
 * `t('area.key', { count, name })` looks a message up; plurals follow Intl.PluralRules through
 * i18next (`_one`, `_few`, `_many`, `_other` keys). Dates and numbers go through lib/format.ts,
 * which asks `currentLocale()`.
 */
import i18next, { type i18n } from 'i18next';
import { createStore } from '../lib/store.js';
import { de } from './de.js';
import { en } from './en.js';
import { es } from './es.js';
import { pl } from './pl.js';
import type { Catalogue } from './types.js';

export type { Catalogue } from './types.js';

/** The languages offered, each named in itself (the picker shows these words). */
export const LANGUAGES = [
  { code: 'en', name: 'English', locale: 'en-US' },
  { code: 'de', name: 'Deutsch', locale: 'de-DE' },
  { code: 'es', name: 'Español', locale: 'es-ES' },
  { code: 'pl', name: 'Polski', locale: 'pl-PL' },
] as const;

export type Language = (typeof LANGUAGES)[number]['code'];

export const CATALOGUES: Record<Language, Catalogue> = { en, de, es, pl };

export const LANGUAGE_STORAGE_KEY = 'meshhub.language';

/** The dotted paths to every message of a catalogue; plural forms (`_one`, `_other`…) under their base. */
type Leaves<T, Prefix extends string = ''> = {
  [K in keyof T & string]: T[K] extends string
    ? `${Prefix}${K extends `${infer Base}_${'zero' | 'one' | 'two' | 'few' | 'many' | 'other'}` ? Base : K}`
    : Leaves<T[K], `${Prefix}${K}.`>;
}[keyof T & string];

/** Every message key of the English catalogue, plural forms under their base: `mesh.nodeCount`. */
export type MessageKey = Leaves<typeof en>;

export type MessageVars = Record<string, string | number>;

function isLanguage(code: string): code is Language {
  return LANGUAGES.some((language) => language.code === code);
}

/**
 * The language to show: the stored choice, else the first of the browser's languages we have
 * (`de-AT` → `de`), else English.
 */
export function pickLanguage(stored: string | null | undefined, browser: readonly string[]): Language {
  if (stored && isLanguage(stored)) return stored;
  for (const tag of browser) {
    const base = tag.toLowerCase().split('-')[0] ?? '';
    if (isLanguage(base)) return base;
  }
  return 'en';
}

/** The browser's globals, typed here so the module also loads in Node (the unit tests). */
interface KeptChoice {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}
const browser = globalThis as {
  localStorage?: KeptChoice;
  navigator?: { languages?: readonly string[]; language?: string };
  document?: { documentElement: { lang: string } };
};

function storage(): KeptChoice | undefined {
  try {
    return browser.localStorage;
  } catch {
    return undefined; // storage blocked: the choice lasts until the tab closes
  }
}

function browserLanguages(): readonly string[] {
  const nav = browser.navigator;
  if (!nav) return [];
  return nav.languages?.length ? nav.languages : nav.language ? [nav.language] : [];
}

const instance: i18n = i18next.createInstance();
const initial = pickLanguage(storage()?.getItem(LANGUAGE_STORAGE_KEY), browserLanguages());
void instance.init({
  lng: initial,
  fallbackLng: 'en',
  resources: Object.fromEntries(
    Object.entries(CATALOGUES).map(([code, catalogue]) => [code, { translation: catalogue }]),
  ),
  initAsync: false,
  interpolation: { escapeValue: false }, // Preact escapes what it renders
  returnNull: false,
});

/** The language in use; views that read it re-render when it changes. */
export const languageStore = createStore<Language>(initial);

/** The BCP 47 locale for Intl formatting: `de-DE`. */
export function currentLocale(): string {
  const code = languageStore.get();
  return LANGUAGES.find((language) => language.code === code)?.locale ?? 'en-US';
}

/** The message in the language in use; `{{name}}` placeholders filled from `vars`. */
export function t(key: MessageKey, vars?: MessageVars): string {
  return instance.t(key, vars ?? {}) as string;
}

/** Several messages in order, e.g. a table's column headings. */
export function tList(...keys: MessageKey[]): string[] {
  return keys.map((key) => t(key));
}

/** Keeps `<html lang>` on the language in use. Called once, before the first render. */
export function followLanguage(): void {
  const root = browser.document?.documentElement;
  if (!root) return;
  const apply = (code: Language) => {
    root.lang = code;
  };
  apply(languageStore.get());
  languageStore.subscribe(apply);
}

/** Switches the UI's language and remembers the choice for this browser. */
export function setLanguage(code: Language): void {
  void instance.changeLanguage(code);
  try {
    storage()?.setItem(LANGUAGE_STORAGE_KEY, code);
  } catch {
    // Full or blocked storage: the choice still applies to this page.
  }
  languageStore.set(code);
}
