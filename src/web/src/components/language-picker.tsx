/**
 * The language of the UI, the first choice in the header's Display menu: each language named in
 * itself, so a person who cannot read the current one still finds theirs. The choice applies at
 * once and is remembered by this browser (src/web/src/i18n).
 */
import { useStore } from '../hooks.js';
import { LANGUAGES, type Language, languageStore, setLanguage, t } from '../i18n/index.js';

export function LanguagePicker() {
  const chosen = useStore(languageStore);
  const id = 'display-language';
  return (
    <label for={id}>
      <span>{t('common.language')}</span>
      <select
        id={id}
        name="language"
        data-testid="language"
        value={chosen}
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
