/**
 * Bulk tags (issue 15 "Bulk tags"; spec: at most 10,000 documents updated): the current filter,
 * how many events match it (counted a page of 500 at a time, stopping past the cap), append or
 * replace, a confirmation, then the hub's answer. The filter's relative time range is fixed when
 * the dialog opens, so the count and the tagging cover the same events.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { useStore } from '../hooks.js';
import { t } from '../i18n/index.js';
import { formatCount } from '../lib/format.js';
import { auditJson, auditWords, fieldError } from './audit-api.js';
import { auditFeaturesStore, refreshOptions } from './audit-features.js';
import { type AuditSearch, apiFilters, describeSearch, filterParams, hasFilters } from './audit-filters.js';
import type { BulkTagsResult, EventPage } from './audit-types.js';
import { AuditAlert } from './form-parts.js';
import { TagInput } from './tag-input.js';

export const BULK_TAG_CAP = 10_000;
const COUNT_PAGE = 500;
/** The two ways to tag, as the form offers them. */
const MODES = [
  ['append', 'audit.bulk.append'],
  ['replace', 'audit.bulk.replace'],
] as const;

type Count =
  | { state: 'counting'; sofar: number }
  | { state: 'done'; count: number; capped: boolean }
  | { state: 'failed'; error: unknown };

export function BulkTags({ search, onClose }: { search: AuditSearch; onClose: (changed: boolean) => void }) {
  const { options } = useStore(auditFeaturesStore);
  const [filters] = useState(() => apiFilters(search, Date.now()));
  const [count, setCount] = useState<Count>({ state: 'counting', sofar: 0 });
  const [tags, setTags] = useState<string[]>([]);
  const [mode, setMode] = useState<'append' | 'replace'>('append');
  const [step, setStep] = useState<'edit' | 'confirm' | 'sending'>('edit');
  const [result, setResult] = useState<BulkTagsResult>();
  const [error, setError] = useState<unknown>();
  const dialog = useRef<HTMLDivElement>(null);
  const filtered = hasFilters(filters);

  useEffect(() => {
    if (!filtered) return;
    const controller = new AbortController();
    void (async () => {
      let seen = 0;
      let cursor: string | null = null;
      try {
        do {
          const params = filterParams(filters);
          params.set('limit', String(COUNT_PAGE));
          if (cursor) params.set('cursor', cursor);
          const page: EventPage = await auditJson<EventPage>(`/api/events?${params}`, {
            signal: controller.signal,
          });
          seen += page.data.length;
          cursor = page.next_cursor;
          setCount({ state: 'counting', sofar: seen });
        } while (cursor && seen <= BULK_TAG_CAP);
        setCount({ state: 'done', count: Math.min(seen, BULK_TAG_CAP), capped: seen > BULK_TAG_CAP });
      } catch (e) {
        if (!controller.signal.aborted) setCount({ state: 'failed', error: e });
      }
    })();
    return () => controller.abort();
  }, [filters, filtered]);

  useEffect(() => {
    dialog.current?.querySelector<HTMLElement>('input, button')?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') onClose(!!result);
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [onClose, result]);

  const n = count.state === 'done' ? count.count : undefined;
  const words = (k: number) => t('audit.bulk.events', { count: k, n: formatCount(k) });
  const quoted = tags.map((tag) => `“${tag}”`).join(', ');
  const cap = formatCount(BULK_TAG_CAP);
  const send = () => {
    setStep('sending');
    setError(undefined);
    auditJson<BulkTagsResult>('/api/events/bulk-tags', {
      method: 'POST',
      body: { filters, tags, mode },
    }).then(
      (answer) => {
        setResult(answer);
        refreshOptions();
      },
      (e: unknown) => {
        setError(e);
        setStep('edit');
      },
    );
  };
  const tagError = error === undefined ? undefined : fieldError(error, 'tags');

  return (
    <div class="drawer-backdrop">
      <div class="dialog" role="dialog" aria-modal="true" aria-labelledby="bulk-title" ref={dialog}>
        <h2 id="bulk-title">{t('audit.bulk.title')}</h2>
        <p class="muted small">{t('audit.bulk.filter', { search: describeSearch(search) })}</p>
        {!filtered ? (
          <p class="form-error" role="alert">
            {t('audit.bulk.needFilter')}
          </p>
        ) : (
          <p role="status" data-testid="bulk-count">
            {count.state === 'counting'
              ? t('audit.bulk.counting', { n: formatCount(count.sofar) })
              : count.state === 'failed'
                ? auditWords(count.error)
                : count.capped
                  ? t('audit.bulk.moreThanCap', { cap })
                  : t('audit.bulk.match', { events: words(count.count), cap })}
          </p>
        )}
        {result ? (
          <div role="status" class="notice-info" data-testid="bulk-result">
            <p>
              {t(result.mode === 'append' ? 'audit.bulk.doneTagged' : 'audit.bulk.doneRetagged', {
                events: words(result.updated),
              })}
              {result.unchanged
                ? `, ${t('audit.bulk.alreadyHad', { events: words(result.unchanged), count: result.tags.length })}`
                : ''}{' '}
              ({t('audit.bulk.ofMatching', { events: words(result.matched) })}
              {result.truncated ? `; ${t('audit.bulk.onlyNewest', { n: formatCount(result.limit) })}` : ''}).
            </p>
            <button type="button" class="button" onClick={() => onClose(true)}>
              {t('audit.close')}
            </button>
          </div>
        ) : step === 'confirm' || step === 'sending' ? (
          <div class="bulk-confirm">
            <p>
              {mode === 'append'
                ? t('audit.bulk.confirmAdd', { tags: quoted, events: words(n ?? 0) })
                : tags.length
                  ? t('audit.bulk.confirmReplace', { tags: quoted, events: words(n ?? 0) })
                  : t('audit.bulk.confirmRemove', { events: words(n ?? 0) })}
            </p>
            <button type="button" class="button" disabled={step === 'sending'} onClick={send}>
              {step === 'sending' ? t('audit.bulk.tagging') : t('audit.bulk.yes')}
            </button>{' '}
            <button type="button" class="button button-secondary" onClick={() => setStep('edit')}>
              {t('mesh.trace.back')}
            </button>
          </div>
        ) : (
          <form
            onSubmit={(e) => {
              e.preventDefault();
              setStep('confirm');
            }}
          >
            <TagInput
              id="bulk-tags"
              label={t('audit.tags')}
              tags={tags}
              suggestions={options?.tags ?? []}
              onChange={setTags}
              error={tagError}
            />
            <fieldset class="bulk-mode">
              <legend>{t('audit.how')}</legend>
              {MODES.map(([value, key]) => (
                <label key={value} class="check">
                  <input type="radio" name="mode" checked={mode === value} onChange={() => setMode(value)} />{' '}
                  {t(key)}
                </label>
              ))}
            </fieldset>
            {!tagError && <AuditAlert error={error} />}
            <div class="dialog-buttons">
              <button
                type="submit"
                class="button"
                disabled={!filtered || n === undefined || n === 0 || (mode === 'append' && tags.length === 0)}
              >
                {n === undefined ? t('audit.bulk.tag') : t('audit.bulk.tagN', { events: words(n) })}
              </button>
              <button type="button" class="button button-secondary" onClick={() => onClose(false)}>
                {t('common.cancel')}
              </button>
            </div>
          </form>
        )}
      </div>
    </div>
  );
}
