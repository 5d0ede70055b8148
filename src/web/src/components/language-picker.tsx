/**
 * The header's language picker: the languages named in themselves; the choice applies at once
 * and is remembered by this browser (src/web/src/i18n).
 */
import { useStore } from '../hooks.js';
import { LANGUAGES, type Language, languageStore, setLanguage, t } from '../i18n/index.js';

export function LanguagePicker() {
  const language = useStore(languageStore);
  return (
    <label class="language-picker">
      <span class="visually-hidden">{t('common.language')}</span>
      <select
        data-testid="language"
        value={language}
        title={t('common.language')}
        onChange={(event) => setLanguage((event.target as HTMLSelectElement).value as Language)}
      >
        {LANGUAGES.map(({ code, name }) => (
          <option key={code} value={code} lang={code}>
            {name}
          </option>
        ))}
      </select>
    </label>
  );
}
