/**
 * The header's "Display" menu: the language (first, named in itself), units of temperature,
 * pressure and wind speed, and the colour scheme (System, Light, Dark). Each choice applies at
 * once and is remembered by this browser (state/display.ts, i18n/index.ts).
 */
import { useEffect, useRef } from 'preact/hooks';
import { useStore } from '../hooks.js';
import { type MessageKey, t } from '../i18n/index.js';
import { DISPLAY_CHOICES, type DisplaySettings } from '../lib/units.js';
import { displayStore, setDisplay } from '../state/display.js';
import { LanguagePicker } from './language-picker.js';

const LABELS: Record<keyof DisplaySettings, MessageKey> = {
  temperature: 'header.temperature',
  pressure: 'header.pressure',
  wind: 'header.wind',
  theme: 'header.theme',
};

/** The colour schemes' words; units are written the same in every language. */
const THEME_WORDS: Record<string, MessageKey> = {
  auto: 'header.themeAuto',
  light: 'header.themeLight',
  dark: 'header.themeDark',
};

const KEYS = Object.keys(LABELS) as Array<keyof DisplaySettings>;

export function DisplaySettingsMenu() {
  const settings = useStore(displayStore);
  const menu = useRef<HTMLDetailsElement>(null);
  useEffect(() => {
    // Closes like a menu: a click elsewhere, or Escape (focus goes back to "Display").
    const onClick = (event: MouseEvent) => {
      if (menu.current?.open && !menu.current.contains(event.target as Node)) menu.current.open = false;
    };
    const onKey = (event: KeyboardEvent) => {
      if (event.key !== 'Escape' || !menu.current?.open) return;
      menu.current.open = false;
      menu.current.querySelector('summary')?.focus();
    };
    document.addEventListener('click', onClick);
    document.addEventListener('keydown', onKey);
    return () => {
      document.removeEventListener('click', onClick);
      document.removeEventListener('keydown', onKey);
    };
  }, []);
  return (
    <details ref={menu} class="display-settings" data-testid="display-settings">
      <summary class="link-button" title={t('header.displayTitle')}>
        {/* On a phone the icon alone, so the links keep their room; the word stays for screen readers. */}
        <svg class="display-icon" viewBox="0 0 16 16" width="16" height="16" aria-hidden="true">
          <path
            d="M2 4h7M13 4h1M2 12h1M7 12h7M9 2v4M13 2v4M3 10v4M7 10v4"
            stroke="currentColor"
            stroke-width="1.5"
            fill="none"
          />
        </svg>
        <span class="display-label">{t('header.display')}</span>
      </summary>
      <div class="display-settings-panel">
        <LanguagePicker />
        {KEYS.map((key) => (
          <label key={key} for={`display-${key}`}>
            <span>{t(LABELS[key])}</span>
            <select
              id={`display-${key}`}
              name={key}
              data-testid={`display-${key}`}
              value={settings[key]}
              onChange={(event) =>
                setDisplay({ [key]: (event.target as HTMLSelectElement).value } as Partial<DisplaySettings>)
              }
            >
              {DISPLAY_CHOICES[key].map(([value, words]) => (
                <option key={value} value={value}>
                  {THEME_WORDS[value] ? t(THEME_WORDS[value]) : words}
                </option>
              ))}
            </select>
          </label>
        ))}
      </div>
    </details>
  );
}
