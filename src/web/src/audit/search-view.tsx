/**
 * The search (issue 15 "Search"): the filters, which live in the URL; a page of events with Prev
 * and Next over the API's cursors and a page-size choice; new events announced, never jumped
 * into; and from here the drawer, bulk tags and export.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { Loading } from '../components/load-states.js';
import { useStore } from '../hooks.js';
import { t } from '../i18n/index.js';
import { Link, navigate } from '../router.js';
import { auditJson, collectionNotConfigured, fieldError } from './audit-api.js';
import { auditFeaturesStore } from './audit-features.js';
import {
  type AuditSearch,
  apiFilters,
  describeSearch,
  filterParams,
  fromLocalInput,
  PAGE_SIZES,
  parseSearch,
  QUICK_RANGES,
  quickRangeLabel,
  type RangeChoice,
  SEARCH_FILTER_FIELDS,
  searchQuery,
  toLocalInput,
} from './audit-filters.js';
import type { AuditEvent, EventPage } from './audit-types.js';
import { BulkTags } from './bulk-tags.js';
import { EventDrawer } from './event-drawer.js';
import { EventTable } from './event-table.js';
import { ExportButtons } from './export-buttons.js';
import { AuditAlert, type ControlProps, described, Field, FieldError, SmallButton } from './form-parts.js';
import { pageArrived } from './render-timing.js';
import { type SavedSearch, searchOfSaved } from './saved-searches.js';
import { SavedSearchesMenu } from './saved-searches-menu.js';
import { TagInput } from './tag-input.js';

/** How often the first page looks for newer events (also when the tab comes back into view). */
const NEW_EVENTS_EVERY_MS = 30_000;

const go = (s: AuditSearch, replace = false) => navigate(`/audit${searchQuery(s)}`, { replace });

/** The events URL of a search: a saved search runs on the API (`?saved=`), else the filters go as they are. */
function eventsUrl(s: AuditSearch, limit: number): string {
  const params = s.saved ? new URLSearchParams() : filterParams(apiFilters(s, Date.now()));
  params.set('limit', String(limit));
  if (s.cursor) params.set('cursor', s.cursor);
  return s.saved
    ? `/api/saved-searches/${encodeURIComponent(s.saved)}/events?${params}`
    : `/api/events?${params}`;
}

export function SearchView({ search }: { search: string }) {
  const parsed = parseSearch(search);
  // Issue 29: a saved search (`?saved=<id>`) brings its filters; the events come from running it.
  const [savedState, setSavedState] = useState<{ id?: string; data?: SavedSearch; error?: unknown }>({});
  const [savedReload, setSavedReload] = useState(0);
  useEffect(() => {
    const id = parsed.saved;
    if (!id) return;
    const controller = new AbortController();
    auditJson<SavedSearch>(`/api/saved-searches/${encodeURIComponent(id)}`, {
      signal: controller.signal,
    }).then(
      (data) => setSavedState({ id, data }),
      (error: unknown) => {
        if (!controller.signal.aborted) setSavedState({ id, error });
      },
    );
    return () => controller.abort();
  }, [parsed.saved, savedReload]);
  const savedSearch = parsed.saved && savedState.id === parsed.saved ? savedState.data : undefined;
  const current: AuditSearch = savedSearch
    ? { ...parsed, ...searchOfSaved(savedSearch.filters, Date.now()) }
    : parsed;
  const { event: openEvent, ...withoutEvent } = current;
  const pageKey = searchQuery({ ...withoutEvent, ...(parsed.saved ? { saved: parsed.saved } : {}) });
  const [page, setPage] = useState<{ key: string; data?: EventPage; error?: unknown }>({ key: '' });
  const [reload, setReload] = useState(0);
  const [fresh, setFresh] = useState<number>(0);
  const [bulkOpen, setBulkOpen] = useState(false);
  const { features, options } = useStore(auditFeaturesStore);

  useEffect(() => {
    const controller = new AbortController();
    const s = parseSearch(pageKey);
    setFresh(0);
    auditJson<EventPage>(eventsUrl(s, s.limit), { signal: controller.signal }).then(
      (data) => {
        const painted = pageArrived();
        setPage({ key: pageKey, data });
        painted?.();
      },
      (error: unknown) => {
        if (!controller.signal.aborted) setPage({ key: pageKey, error });
      },
    );
    return () => controller.abort();
  }, [pageKey, reload]);

  const data = page.key === pageKey ? page.data : undefined;
  const error =
    (page.key === pageKey ? page.error : undefined) ??
    (parsed.saved && savedState.id === parsed.saved ? savedState.error : undefined);
  const top = data?.data[0];

  // New events on the first page are announced; the table stays where the reader is.
  useEffect(() => {
    const s = parseSearch(pageKey);
    if (s.cursor || !data) return;
    let stopped = false;
    const known = new Set(data.data.map((e) => e.id));
    const look = () => {
      if (document.visibilityState !== 'visible') return;
      auditJson<EventPage>(eventsUrl(s, 100)).then(
        (newer) => {
          if (stopped) return;
          const count = newer.data.filter(
            (e) => !known.has(e.id) && (!top || e.timestamp >= top.timestamp),
          ).length;
          setFresh(count);
        },
        () => {},
      );
    };
    const timer = setInterval(look, NEW_EVENTS_EVERY_MS);
    document.addEventListener('visibilitychange', look);
    return () => {
      stopped = true;
      clearInterval(timer);
      document.removeEventListener('visibilitychange', look);
    };
  }, [data, pageKey, top]);

  const summary = describeSearch(current);
  const { saved: _saved, ...plain } = withoutEvent;
  const rows = data?.data ?? [];
  return (
    <div class="audit-search">
      <h1 class="visually-hidden">{t('audit.auditEvents')}</h1>
      <SavedSearchesMenu
        search={current}
        current={savedSearch}
        onChanged={() => setSavedReload((n) => n + 1)}
      />
      {parsed.saved && !savedSearch && savedState.error === undefined ? (
        <p class="loading" role="status">
          {t('audit.saved.loading')}
        </p>
      ) : (
        <FilterForm
          key={`${pageKey.replace(/[?&]cursor=[^&]*/, '')}#${savedSearch?.updated_at ?? ''}`}
          current={current}
          error={error}
          rows={rows}
        />
      )}
      <div class="audit-toolbar">
        <p class="muted small" data-testid="search-summary">
          {savedSearch && <strong>{t('audit.saved.showing', { name: savedSearch.name })} · </strong>}
          {summary}
        </p>
        <div class="audit-actions">
          <SmallButton onClick={() => setBulkOpen(true)}>{t('audit.tagAllMatching')}</SmallButton>
          <ExportButtons search={current} />
          {features?.ai_features_enabled && (
            <Link
              href={`/audit/ask${searchQuery({ ...plain, cursor: undefined })}`}
              class="button button-secondary button-small"
            >
              {t('audit.askAboutTheseEvents')}
            </Link>
          )}
        </div>
      </div>
      {fresh > 0 && (
        <div class="notice-info audit-fresh" role="status">
          {fresh >= 100 ? t('audit.moreThan99New') : t('audit.newEvents', { count: fresh })}{' '}
          <button
            type="button"
            class="link-button"
            onClick={() => {
              setFresh(0);
              setReload((n) => n + 1);
            }}
          >
            {t('audit.showThem')}
          </button>
        </div>
      )}
      {!fieldErrorsOnly(error) && <AuditAlert error={error} />}
      {!data && error === undefined && <Loading>{t('audit.searching')}</Loading>}
      {data && (
        <>
          <EventTable
            events={rows}
            labels={options?.service_labels}
            showTenant={(options?.tenants?.length ?? 0) > 1}
            onOpen={(id) => go({ ...current, event: id })}
          />
          {rows.length === 0 && (
            <p class="audit-empty" role="status">
              {features?.collection === 'not_configured' ? `${collectionNotConfigured()} ` : ''}
              {t(
                features?.collection === 'not_configured'
                  ? current.cursor
                    ? 'audit.noStoredMatchPage'
                    : 'audit.noStoredMatch'
                  : current.cursor
                    ? 'audit.noMatchPage'
                    : 'audit.noMatch',
              )}
            </p>
          )}
          <Pager current={current} data={data} />
        </>
      )}
      {openEvent && (
        <EventDrawer
          id={openEvent}
          onClose={() => go(withoutEvent, true)}
          onChanged={() => setReload((n) => n + 1)}
        />
      )}
      {bulkOpen && (
        <BulkTags
          search={current}
          onClose={(changed) => {
            setBulkOpen(false);
            if (changed) setReload((n) => n + 1);
          }}
        />
      )}
    </div>
  );
}

/** A 400 whose every field error is shown next to its input: no general message needed. */
function fieldErrorsOnly(error: unknown): boolean {
  return (
    !!fieldError(error, ...SEARCH_FILTER_FIELDS) &&
    (error as { fieldErrors: { field: string }[] }).fieldErrors.every((e) =>
      SEARCH_FILTER_FIELDS.some((f) => e.field === f || e.field.startsWith(`${f}.`)),
    )
  );
}

function Pager({ current, data }: { current: AuditSearch; data: EventPage }) {
  return (
    <nav class="audit-pager" aria-label={t('audit.pagesOfEvents')}>
      <button
        type="button"
        class="button button-secondary"
        disabled={!data.prev_cursor}
        onClick={() => data.prev_cursor && go({ ...current, cursor: data.prev_cursor })}
      >
        ← {t('audit.newer')}
        <span class="visually-hidden"> {t('audit.eventsPreviousPage')}</span>
      </button>
      <label class="audit-page-size">
        {t('audit.perPage')}{' '}
        <select
          value={String(current.limit)}
          onChange={(e) => {
            const { cursor: _c, ...rest } = current;
            go({ ...rest, limit: Number(e.currentTarget.value) });
          }}
        >
          {PAGE_SIZES.map((n) => (
            <option key={n} value={String(n)}>
              {n}
            </option>
          ))}
        </select>
      </label>
      <button
        type="button"
        class="button button-secondary"
        disabled={!data.next_cursor}
        onClick={() => data.next_cursor && go({ ...current, cursor: data.next_cursor })}
      >
        {t('audit.older')} →<span class="visually-hidden"> {t('audit.eventsNextPage')}</span>
      </button>
    </nav>
  );
}

function FilterForm({ current, error, rows }: { current: AuditSearch; error: unknown; rows: AuditEvent[] }) {
  const { options } = useStore(auditFeaturesStore);
  const [draft, setDraft] = useState<AuditSearch>(current);
  const details = useRef<HTMLDetailsElement>(null);
  const set = (patch: Partial<AuditSearch>) => setDraft((d) => ({ ...d, ...patch }));
  const services = [...new Set([...(options?.services ?? []), ...draft.services])];
  const actors = [...new Set(rows.map((r) => r.actor))].sort();
  const err = (...fields: string[]) => fieldError(error, ...fields);
  /** One of the typed filters: its control's id, value, change and error. */
  const bindText = (key: 'actor' | 'operation' | 'result') => ({
    id: `f-${key}`,
    value: draft[key],
    onChange: (value: string) => set({ [key]: value }),
    error: err(key),
  });
  /** The custom range's bounds: cleared, the bound is left out of the search. */
  const bindTime = (key: 'start' | 'end') => ({
    id: `f-${key}`,
    value: draft[key],
    onChange: (value: string | undefined) => {
      const { [key]: _cleared, ...rest } = draft;
      setDraft(value ? { ...rest, [key]: value } : rest);
    },
    error: err(key),
  });
  /** The tag filters, by their draft key and their API name (`include_tags` is `f-include-tags`). */
  const bindTags = (key: 'includeTags' | 'excludeTags', field: 'include_tags' | 'exclude_tags') => ({
    id: `f-${field.replace('_', '-')}`,
    tags: draft[key],
    suggestions: options?.tags ?? [],
    onChange: (tags: string[]) => set({ [key]: tags }),
    error: err(field),
  });

  return (
    <form
      class="panel audit-filters"
      aria-label={t('audit.filters')}
      onSubmit={(e) => {
        e.preventDefault();
        // Searching again leaves the saved search: these are the filters now.
        const { cursor: _c, event: _e, saved: _s, ...rest } = draft;
        go(rest);
      }}
    >
      <details class="audit-services" ref={details}>
        <summary>
          {t('audit.servicesColon')}{' '}
          {draft.services.length
            ? draft.services.map((s) => options?.service_labels[s] ?? s).join(', ')
            : t('billing.all')}
        </summary>
        <fieldset>
          <legend class="visually-hidden">{t('audit.services')}</legend>
          {services.length === 0 && <p class="muted small">{t('audit.noEventsStoredYet')}</p>}
          {services.map((service) => (
            <label key={service} class="check">
              <input
                type="checkbox"
                checked={draft.services.includes(service)}
                onChange={(e) =>
                  set({
                    services: e.currentTarget.checked
                      ? [...draft.services, service]
                      : draft.services.filter((s) => s !== service),
                  })
                }
              />{' '}
              {options?.service_labels[service] ?? service}
            </label>
          ))}
        </fieldset>
        <FieldError id="f-services" message={err('services')} />
      </details>
      {/* Issue 29: only a hub that collects more than one tenant offers the choice. */}
      {((options?.tenants?.length ?? 0) > 1 || draft.tenants.length > 0) && (
        <div class="audit-field">
          <label for="f-tenants">{t('audit.tenant')}</label>
          <select
            id="f-tenants"
            value={draft.tenants[0] ?? ''}
            onChange={(e) => set({ tenants: e.currentTarget.value ? [e.currentTarget.value] : [] })}
          >
            <option value="">{t('billing.all')}</option>
            {[...new Set([...(options?.tenants ?? []), ...draft.tenants])].map((tenant) => (
              <option key={tenant} value={tenant}>
                {tenant}
              </option>
            ))}
          </select>
          <FieldError id="f-tenants-error" message={err('tenants')} />
        </div>
      )}
      <SuggestField label={t('audit.actor')} suggestions={actors} {...bindText('actor')} />
      <SuggestField
        label={t('audit.operation')}
        suggestions={options?.operations ?? []}
        {...bindText('operation')}
      />
      <SuggestField label={t('audit.result')} suggestions={options?.results ?? []} {...bindText('result')} />
      <div class="audit-field">
        <label for="f-range">{t('audit.time')}</label>
        <select
          id="f-range"
          value={draft.range}
          onChange={(e) => {
            const range = e.currentTarget.value as RangeChoice;
            if (range !== 'custom') {
              const { start: _s, end: _e, ...rest } = draft;
              setDraft({ ...rest, range });
            } else {
              set({ range, start: new Date(Date.now() - 86_400_000).toISOString() });
            }
          }}
        >
          {QUICK_RANGES.map((r) => (
            <option key={r.id} value={r.id}>
              {quickRangeLabel(r.id)}
            </option>
          ))}
          <option value="custom">{t('audit.custom')}</option>
        </select>
      </div>
      {draft.range === 'custom' && (
        <>
          <DateTimeField label={t('audit.from')} {...bindTime('start')} />
          <DateTimeField label={t('audit.until')} {...bindTime('end')} />
        </>
      )}
      <TagInput label={t('audit.withTags')} {...bindTags('includeTags', 'include_tags')} />
      <TagInput label={t('audit.withoutTags')} {...bindTags('excludeTags', 'exclude_tags')} />
      <div class="audit-filter-buttons">
        <button type="submit" class="button">
          {t('audit.search')}
        </button>
        <button
          type="button"
          class="button button-secondary"
          onClick={() => {
            details.current?.removeAttribute('open');
            go(parseSearch(current.limit !== 50 ? `?limit=${current.limit}` : ''));
          }}
        >
          {t('audit.clear')}
        </button>
      </div>
    </form>
  );
}

/** A search box with suggestions (a datalist). */
function SuggestField({
  id,
  label,
  value,
  suggestions,
  onChange,
  error,
}: ControlProps<string> & { suggestions: readonly string[] }) {
  return (
    <Field id={id} label={label} error={error}>
      <input
        id={id}
        type="search"
        list={`${id}-list`}
        value={value}
        onInput={(e) => onChange(e.currentTarget.value)}
        {...described(id, error)}
      />
      <datalist id={`${id}-list`}>
        {suggestions.map((s) => (
          <option key={s} value={s} />
        ))}
      </datalist>
    </Field>
  );
}

/** A local date and time; `onChange` gets the ISO instant, or undefined when cleared. */
function DateTimeField({ id, label, value, onChange, error }: ControlProps<string | undefined>) {
  return (
    <Field id={id} label={label} error={error}>
      <input
        id={id}
        type="datetime-local"
        value={toLocalInput(value)}
        onChange={(e) => onChange(fromLocalInput(e.currentTarget.value))}
        {...described(id, error)}
      />
    </Field>
  );
}
