/**
 * The display settings of this browser (lib/units.ts): kept in localStorage, so they survive a
 * reload and apply to every page, and the colour scheme applied to `<html data-theme>`.
 */
import { createStore } from '../lib/store.js';
import { DISPLAY_STORAGE_KEY, type DisplaySettings, parseDisplay, resolvedTheme } from '../lib/units.js';

function storage(): Storage | undefined {
  try {
    return globalThis.localStorage;
  } catch {
    return undefined; // storage blocked (privacy settings): the choice lasts until the tab closes
  }
}

export const displayStore = createStore<DisplaySettings>(
  parseDisplay(storage()?.getItem(DISPLAY_STORAGE_KEY)),
);

/** Changes one setting, remembers it for this browser, and applies the colour scheme. */
export function setDisplay(patch: Partial<DisplaySettings>): void {
  displayStore.set((current) => ({ ...current, ...patch }));
  try {
    storage()?.setItem(DISPLAY_STORAGE_KEY, JSON.stringify(displayStore.get()));
  } catch {
    // Full or blocked storage: the choice still applies to this page.
  }
}

/** The scheme in use (`light` or `dark`): charts take their colours from it when drawn. */
export const themeStore = createStore<'light' | 'dark'>('light');

/**
 * Keeps `<html data-theme>` on the scheme in use (the stylesheet's dark palette keys on it),
 * following the system while the choice is `auto`. Called once, before the first render.
 */
export function followTheme(): void {
  if (typeof document === 'undefined' || typeof matchMedia !== 'function') return;
  const system = matchMedia('(prefers-color-scheme: dark)');
  const apply = () => {
    const root = document.documentElement;
    const choice = displayStore.get().theme;
    const theme = resolvedTheme(choice, system.matches);
    root.dataset.theme = theme;
    root.dataset.themeChoice = choice;
    themeStore.set(theme);
  };
  apply();
  system.addEventListener('change', apply);
  displayStore.subscribe(apply);
}
