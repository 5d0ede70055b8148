/**
 * One event (issue 15 "One event"): its normalised fields, the raw record (collapsible,
 * copyable), tags (add, remove, with suggestions), comments (add, list with author and time), and
 * "Explain" when AI features are on. A dialog: focus moves in, Escape or Close ends it and focus
 * goes back where it was; the URL names the event (`?event=42`), so it can be shared.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { Loading } from '../components/load-states.js';
import { useStore } from '../hooks.js';
import { t } from '../i18n/index.js';
import { auditJson, auditWords, fieldError } from './audit-api.js';
import { auditFeaturesStore, refreshOptions } from './audit-features.js';
import type { AuditComment, AuditEventDetail, ExplainAnswer } from './audit-types.js';
import { AuditAlert } from './form-parts.js';
import { outcomeClass, shownTime } from './format.js';
import { TagInput } from './tag-input.js';
import { TimelinePivots } from './timeline-pivots.js';

export function EventDrawer({
  id,
  onClose,
  onChanged,
}: {
  id: string;
  onClose: () => void;
  onChanged: () => void;
}) {
  const [state, setState] = useState<{ id: string; event?: AuditEventDetail; error?: unknown }>({ id });
  const panel = useRef<HTMLDivElement>(null);
  const closeButton = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    const controller = new AbortController();
    setState({ id });
    auditJson<AuditEventDetail>(`/api/events/${encodeURIComponent(id)}`, { signal: controller.signal }).then(
      (event) => setState({ id, event }),
      (error: unknown) => {
        if (!controller.signal.aborted) setState({ id, error });
      },
    );
    return () => controller.abort();
  }, [id]);

  // The parent passes a new onClose on every render (a tag saved reloads its list): read it
  // through a ref, so focus moves only when the drawer opens and closes, never while typing.
  const close = useRef(onClose);
  close.current = onClose;
  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    closeButton.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') close.current();
    };
    document.addEventListener('keydown', onKey);
    return () => {
      document.removeEventListener('keydown', onKey);
      if (before?.isConnected) before.focus();
    };
  }, []);

  const event = state.id === id ? state.event : undefined;
  const error = state.id === id ? state.error : undefined;
  const { options } = useStore(auditFeaturesStore);
  const update = (next: AuditEventDetail) => {
    setState({ id, event: next });
    onChanged();
  };
  return (
    <div class="drawer-backdrop">
      <div
        class="drawer"
        role="dialog"
        aria-modal="true"
        aria-labelledby="drawer-title"
        ref={panel}
        data-testid="event-drawer"
      >
        <div class="drawer-head">
          <h2 id="drawer-title">
            {event ? event.operation || t('audit.event') : t('audit.eventId', { id })}
          </h2>
          <button
            type="button"
            class="icon-button"
            ref={closeButton}
            onClick={onClose}
            aria-label={t('audit.closeEvent')}
          >
            ×
          </button>
        </div>
        <AuditAlert error={error} />
        {!event && error === undefined && <Loading>{t('common.loading')}</Loading>}
        {event && (
          <>
            <dl class="event-fields">
              <dt>{t('mesh.packets.time')}</dt>
              <dd>
                <time dateTime={event.timestamp}>{shownTime(event.timestamp)}</time>{' '}
                <span class="muted small">({event.timestamp})</span>
              </dd>
              {(options?.tenants?.length ?? 0) > 1 && (
                <>
                  <dt>{t('audit.tenant')}</dt>
                  <dd>{event.tenant}</dd>
                </>
              )}
              <dt>{t('audit.service')}</dt>
              <dd>{event.service}</dd>
              <dt>{t('audit.operation')}</dt>
              <dd>{event.operation}</dd>
              <dt>{t('audit.result')}</dt>
              <dd>
                <span class={outcomeClass(event.result)}>{event.result_raw || event.result}</span>
              </dd>
              <dt>{t('audit.actor')}</dt>
              <dd>{event.actor}</dd>
              <dt>{t('audit.target')}</dt>
              <dd>{event.target || '—'}</dd>
              <dt>{t('audit.source')}</dt>
              <dd>
                {event.source} <span class="muted small">{event.source_id}</span>
              </dd>
              <dt>{t('audit.id')}</dt>
              <dd>{event.id}</dd>
            </dl>
            <TimelinePivots event={event} />
            <RawRecord raw={event.raw} />
            <EventTags event={event} onUpdated={update} />
            <Comments
              event={event}
              onAdded={(comment) => update({ ...event, comments: [...event.comments, comment] })}
            />
            <Explain id={event.id} />
          </>
        )}
      </div>
    </div>
  );
}

function RawRecord({ raw }: { raw: unknown }) {
  const text = raw === null || raw === undefined ? '' : JSON.stringify(raw, null, 2);
  const pre = useRef<HTMLPreElement>(null);
  const [copied, setCopied] = useState<string>();
  if (!text) return <p class="muted small">{t('audit.noRaw')}</p>;
  return (
    <details class="raw-record">
      <summary>{t('audit.raw')}</summary>
      <button
        type="button"
        class="button button-secondary button-small"
        onClick={() => {
          // Without clipboard permission (plain http on the LAN) the text is selected for Ctrl+C.
          const select = () => {
            const selection = getSelection();
            if (pre.current && selection) selection.selectAllChildren(pre.current);
            setCopied(t('audit.selected'));
          };
          if (!navigator.clipboard) return select();
          navigator.clipboard.writeText(text).then(() => setCopied(t('audit.copied')), select);
        }}
      >
        {t('audit.copy')}
      </button>
      <span role="status" class="muted small">
        {copied ? ` ${copied}` : ''}
      </span>
      <pre ref={pre}>{text}</pre>
    </details>
  );
}

function EventTags({
  event,
  onUpdated,
}: {
  event: AuditEventDetail;
  onUpdated: (e: AuditEventDetail) => void;
}) {
  const { options } = useStore(auditFeaturesStore);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  // Shown at once, before the server answers: a second tag added (or one removed) quickly after
  // the first builds on what the user sees, not on the event as last loaded.
  const [tags, setTags] = useState(event.tags);
  useEffect(() => setTags(event.tags), [event.tags]);
  // Each PATCH sets the whole list: they go one after another, and only the newest one's answer
  // is shown (an older answer arriving last would take a tag away again).
  const queue = useRef<Promise<unknown>>(Promise.resolve());
  const newest = useRef(0);
  const save = (next: string[]) => {
    setTags(next);
    setBusy(true);
    setError(undefined);
    const n = ++newest.current;
    const send = () =>
      auditJson<AuditEventDetail>(`/api/events/${event.id}/tags`, {
        method: 'PATCH',
        body: { tags: next },
      }).then(
        (updated) => {
          if (n !== newest.current) return;
          setBusy(false);
          onUpdated({ ...event, ...updated, raw: event.raw });
          refreshOptions();
        },
        (e: unknown) => {
          if (n !== newest.current) return;
          setBusy(false);
          setError(e);
          setTags(event.tags);
        },
      );
    queue.current = queue.current.then(send, send);
  };
  const words = error === undefined ? undefined : (fieldError(error, 'tags') ?? auditWords(error));
  return (
    <section class="drawer-section" aria-labelledby="tags-title" aria-busy={busy}>
      <h3 id="tags-title">{t('audit.tags')}</h3>
      {!tags.length && <p class="muted small">{t('audit.noTags')}</p>}
      <TagInput
        id="event-tags"
        label={t('audit.addTag')}
        tags={tags}
        suggestions={options?.tags ?? []}
        onChange={save}
        error={words}
      />
    </section>
  );
}

function Comments({ event, onAdded }: { event: AuditEventDetail; onAdded: (c: AuditComment) => void }) {
  const [text, setText] = useState('');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const words = error === undefined ? undefined : (fieldError(error, 'text') ?? auditWords(error));
  return (
    <section class="drawer-section" aria-labelledby="comments-title">
      <h3 id="comments-title">{t('audit.comments')}</h3>
      {event.comments.length === 0 ? (
        <p class="muted small">{t('audit.noComments')}</p>
      ) : (
        <ol class="comments">
          {event.comments.map((c) => (
            <li key={c.id}>
              <p class="comment-meta">
                <strong>{c.author}</strong>{' '}
                <time class="muted small" dateTime={c.created_at}>
                  {shownTime(c.created_at)}
                </time>
              </p>
              <p class="comment-text">{c.text}</p>
            </li>
          ))}
        </ol>
      )}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setBusy(true);
          setError(undefined);
          auditJson<AuditComment>(`/api/events/${event.id}/comments`, {
            method: 'POST',
            body: { text },
          }).then(
            (comment) => {
              setBusy(false);
              setText('');
              onAdded(comment);
            },
            (err: unknown) => {
              setBusy(false);
              setError(err);
            },
          );
        }}
      >
        <label for="comment-text">{t('audit.addComment')}</label>
        <textarea
          id="comment-text"
          rows={3}
          maxLength={2000}
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
          aria-invalid={words ? 'true' : undefined}
          aria-describedby={words ? 'comment-error' : undefined}
        />
        {words && (
          <p class="form-error" id="comment-error" role="alert">
            {words}
          </p>
        )}
        <button type="submit" class="button button-small" disabled={busy || !text.trim()}>
          {t('audit.addCommentButton')}
        </button>
      </form>
    </section>
  );
}

function Explain({ id }: { id: string }) {
  const { features } = useStore(auditFeaturesStore);
  const [state, setState] = useState<{ busy?: boolean; answer?: ExplainAnswer; error?: unknown }>({});
  if (!features?.ai_features_enabled) return null;
  return (
    <section class="drawer-section" aria-labelledby="explain-title">
      <h3 id="explain-title">{t('audit.explanation')}</h3>
      <button
        type="button"
        class="button button-secondary button-small"
        disabled={state.busy}
        onClick={() => {
          setState({ busy: true });
          auditJson<ExplainAnswer>(`/api/events/${id}/explain`, { method: 'POST' }).then(
            (answer) => setState({ answer }),
            (error: unknown) => setState({ error }),
          );
        }}
      >
        {state.busy ? t('audit.explaining') : t('audit.explain')}
      </button>
      <AuditAlert error={state.error} />
      {state.answer && (
        <div class="explain-answer" role="status">
          <p class="answer-text">{state.answer.explanation}</p>
          <p class="muted small">
            {state.answer.llm_used
              ? t(state.answer.cached ? 'audit.writtenCached' : 'audit.written')
              : state.answer.fallback_reason
                ? t('audit.noLlmUsedBecause', { reason: state.answer.fallback_reason })
                : t('audit.noLlmUsed')}
          </p>
        </div>
      )}
    </section>
  );
}
