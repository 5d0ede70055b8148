/**
 * Saved searches in the search view (issue 29): the list of those the user may open (their own,
 * and those shared with their roles), each a link to `/audit?saved=<id>` — so a link opens it
 * too — with Delete where the API says the user may; and "Save search…", which names the current
 * filters, kept private or shared with one of the audit roles the API offers.
 */
import { useEffect, useState } from 'preact/hooks';
import { t } from '../i18n/index.js';
import { Link, navigate } from '../router.js';
import { auditJson, auditWords, fieldError } from './audit-api.js';
import { type AuditSearch, searchQuery } from './audit-filters.js';
import { described, Field } from './form-parts.js';
import { type SavedSearch, type SavedSearchList, savedFiltersOf } from './saved-searches.js';
import './saved-searches.css';

export function SavedSearchesMenu({
  search,
  current,
  onChanged,
}: {
  /** The search as it stands (a saved one's filters in place). */
  search: AuditSearch;
  /** The saved search open now, if any. */
  current: SavedSearch | undefined;
  /** A saved search was changed or deleted (the open one may need reading again). */
  onChanged: () => void;
}) {
  const [list, setList] = useState<{ data?: SavedSearchList; error?: unknown }>({});
  const [reload, setReload] = useState(0);
  const [name, setName] = useState('');
  const [share, setShare] = useState('');
  const [saveError, setSaveError] = useState<unknown>();
  const [notice, setNotice] = useState('');
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    let current = true;
    const settle = (state: typeof list) => current && setList(state);
    auditJson<SavedSearchList>('/api/saved-searches').then(
      (data) => settle({ data }),
      (error: unknown) => settle({ error }),
    );
    return () => {
      current = false;
    };
  }, [reload]);

  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setSaveError(undefined);
    try {
      const saved = await auditJson<SavedSearch>('/api/saved-searches', {
        method: 'POST',
        body: { name, shared_with: share || null, filters: savedFiltersOf(search) },
      });
      setNotice(t('audit.saved.savedAs', { name: saved.name }));
      setName('');
      setReload((n) => n + 1);
      const { cursor: _c, event: _e, ...rest } = search;
      navigate(`/audit${searchQuery({ ...rest, saved: saved.id })}`);
    } catch (error) {
      setSaveError(error);
    } finally {
      setBusy(false);
    }
  };

  const remove = async (s: SavedSearch) => {
    setSaveError(undefined);
    try {
      await auditJson(`/api/saved-searches/${encodeURIComponent(s.id)}`, { method: 'DELETE' });
      setNotice(t('audit.saved.deleted', { name: s.name }));
      setReload((n) => n + 1);
      if (current?.id === s.id) {
        // The filters stay on screen, as plain filters.
        const { saved: _s, cursor: _c, ...rest } = search;
        navigate(`/audit${searchQuery(rest)}`, { replace: true });
      }
      onChanged();
    } catch (error) {
      setSaveError(error);
    }
  };

  const items = list.data?.data ?? [];
  const nameError = fieldError(saveError, 'name');
  const otherError = saveError !== undefined && !nameError ? auditWords(saveError) : undefined;
  return (
    <section class="panel audit-saved" aria-label={t('audit.saved.title')}>
      <details class="audit-saved-open" data-testid="saved-searches">
        <summary>{t('audit.saved.titleCount', { count: items.length })}</summary>
        {list.error !== undefined && (
          <p class="form-error" role="alert">
            {auditWords(list.error)}
          </p>
        )}
        {list.data && items.length === 0 && <p class="muted small">{t('audit.saved.none')}</p>}
        <ul class="audit-saved-list">
          {items.map((s) => (
            <li key={s.id}>
              <Link
                href={`/audit?saved=${encodeURIComponent(s.id)}`}
                {...(current?.id === s.id ? { 'aria-current': 'page' as const } : {})}
              >
                {s.name}
              </Link>
              <span class="muted small">
                {s.shared_with === null
                  ? t('audit.saved.private')
                  : s.mine
                    ? t('audit.saved.sharedWith', { role: s.shared_with })
                    : t('audit.saved.sharedBy', { owner: s.owner, role: s.shared_with })}
              </span>
              {s.can_change && (
                <button
                  type="button"
                  class="link-button"
                  aria-label={t('audit.saved.deleteNamed', { name: s.name })}
                  onClick={() => void remove(s)}
                >
                  {t('audit.saved.delete')}
                </button>
              )}
            </li>
          ))}
        </ul>
      </details>
      <details class="audit-saved-new">
        <summary>{t('audit.saved.save')}</summary>
        <form class="audit-saved-form" onSubmit={(e) => void save(e)}>
          <Field id="saved-name" label={t('audit.saved.name')} error={nameError}>
            <input
              id="saved-name"
              type="text"
              required
              maxLength={120}
              value={name}
              onInput={(e) => setName(e.currentTarget.value)}
              {...described('saved-name', nameError)}
            />
          </Field>
          <Field id="saved-share" label={t('audit.saved.whoSees')}>
            <select id="saved-share" value={share} onChange={(e) => setShare(e.currentTarget.value)}>
              <option value="">{t('audit.saved.onlyMe')}</option>
              {(list.data?.share_roles ?? []).map((role) => (
                <option key={role} value={role}>
                  {t('audit.saved.roleOption', { role })}
                </option>
              ))}
            </select>
          </Field>
          <button type="submit" class="button" disabled={busy}>
            {t('audit.saved.saveButton')}
          </button>
        </form>
        {otherError && (
          <p class="form-error" role="alert">
            {otherError}
          </p>
        )}
      </details>
      {notice && (
        <p class="muted small" role="status">
          {notice}
        </p>
      )}
    </section>
  );
}
