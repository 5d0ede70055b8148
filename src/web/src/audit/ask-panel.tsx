/**
 * Ask (issue 15 "Ask"; spec "Ask behaviour"): a question in plain language, optionally within the
 * search's filters (`/audit/ask?services=…`, from "Ask about these events"). The answer, the
 * cited events (each opens the drawer), the scope notes (time range, excluded services, "N shown
 * of M"), and whether a language model answered. In the background (`"async": true`) the job is
 * polled every second, with its state and how long it has run. The console shows this view only
 * when AI features are on (the route does not exist otherwise).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { useTitle } from '../hooks.js';
import { t } from '../i18n/index.js';
import { formatCount } from '../lib/format.js';
import { Link } from '../router.js';
import { auditJson, auditWords, fieldError } from './audit-api.js';
import { apiFilters, describeSearch, hasFilters, parseSearch } from './audit-filters.js';
import type { AskAccepted, AskAnswer, AskJob } from './audit-types.js';
import { EventDrawer } from './event-drawer.js';
import { outcomeClass, shownTime } from './format.js';

const POLL_MS = 1_000;

type Run =
  | { state: 'idle' }
  | { state: 'asking'; since: number }
  | { state: 'job'; jobId: string; status: AskJob['status']; since: number }
  | { state: 'done'; answer: AskAnswer }
  | { state: 'failed'; error: unknown };

export function AskView({ search }: { search: string }) {
  useTitle('Ask about audit events');
  const scope = parseSearch(search);
  const [filters] = useState(() => apiFilters(scope, Date.now()));
  const [question, setQuestion] = useState('');
  const [background, setBackground] = useState(false);
  const [run, setRun] = useState<Run>({ state: 'idle' });
  const [open, setOpen] = useState<string>();
  const [now, setNow] = useState(Date.now());
  const stopped = useRef(false);
  useEffect(
    () => () => {
      stopped.current = true;
    },
    [],
  );

  const jobId = run.state === 'job' ? run.jobId : undefined;
  useEffect(() => {
    if (!jobId) return;
    let cancelled = false;
    const poll = async () => {
      while (!cancelled) {
        await new Promise((r) => setTimeout(r, POLL_MS));
        if (cancelled) return;
        setNow(Date.now());
        try {
          const job = await auditJson<AskJob>(`/api/jobs/${encodeURIComponent(jobId)}`);
          if (cancelled) return;
          if (job.status === 'succeeded' && job.result) return setRun({ state: 'done', answer: job.result });
          if (job.status === 'failed')
            return setRun({ state: 'failed', error: new Error(job.error ?? 'the background job failed') });
          setRun((r) => (r.state === 'job' ? { ...r, status: job.status } : r));
        } catch (error) {
          if (!cancelled) setRun({ state: 'failed', error });
          return;
        }
      }
    };
    void poll();
    return () => {
      cancelled = true;
    };
  }, [jobId]);

  const ask = (e: Event) => {
    e.preventDefault();
    const since = Date.now();
    setRun({ state: 'asking', since });
    const body = { question, ...filters, ...(background ? { async: true } : {}) };
    auditJson<AskAnswer | AskAccepted>('/api/ask', { method: 'POST', body }).then(
      (answer) => {
        if (stopped.current) return;
        if ('job_id' in answer) setRun({ state: 'job', jobId: answer.job_id, status: answer.status, since });
        else setRun({ state: 'done', answer });
      },
      (error: unknown) => setRun({ state: 'failed', error }),
    );
  };

  const busy = run.state === 'asking' || run.state === 'job';
  const questionError = run.state === 'failed' ? fieldError(run.error, 'question') : undefined;
  return (
    <section class="panel audit-ask" aria-labelledby="ask-title">
      <h1 id="ask-title">{t('audit.askHeading')}</h1>
      <form onSubmit={ask}>
        <label for="ask-question">{t('audit.yourQuestion')}</label>
        <textarea
          id="ask-question"
          rows={3}
          maxLength={2000}
          value={question}
          placeholder={t('audit.questionPlaceholder')}
          onInput={(e) => setQuestion(e.currentTarget.value)}
          aria-invalid={questionError ? 'true' : undefined}
          aria-describedby={questionError ? 'ask-question-error' : undefined}
        />
        {questionError && (
          <p class="form-error" id="ask-question-error">
            {questionError}
          </p>
        )}
        {hasFilters(filters) && search && (
          <p class="muted small">
            {t('audit.withinSearch', { search: describeSearch(scope) })}{' '}
            <Link href="/audit/ask">{t('audit.askAll')}</Link>
          </p>
        )}
        <label class="check">
          <input
            type="checkbox"
            checked={background}
            onChange={(e) => setBackground(e.currentTarget.checked)}
          />{' '}
          {t('audit.background')}
        </label>
        <button type="submit" class="button" disabled={busy || !question.trim()}>
          {t('audit.ask')}
        </button>
      </form>
      <div role="status" aria-live="polite" data-testid="ask-progress">
        {run.state === 'asking' && <p class="loading">{t('audit.thinking')}</p>}
        {run.state === 'job' && (
          <p class="ask-job">
            <progress aria-label={t('audit.backgroundQuestion')} />{' '}
            {run.status === 'queued' ? t('audit.queued') : t('audit.working')}…{' '}
            {Math.max(0, Math.round((now - run.since) / 1000))} s
          </p>
        )}
      </div>
      {run.state === 'failed' && !questionError && (
        <p class="form-error" role="alert">
          {auditWords(run.error)}
        </p>
      )}
      {run.state === 'done' && <Answer answer={run.answer} onOpen={setOpen} />}
      {open && <EventDrawer id={open} onClose={() => setOpen(undefined)} onChanged={() => {}} />}
    </section>
  );
}

function Answer({ answer, onOpen }: { answer: AskAnswer; onOpen: (id: string) => void }) {
  const q = answer.query_info;
  const range =
    q.time_range.start || q.time_range.end
      ? t('audit.rangeTo', {
          start: shownTime(q.time_range.start),
          end: q.time_range.end ? shownTime(q.time_range.end) : t('audit.now'),
        })
      : t('audit.anyTime');
  return (
    <article class="ask-answer" data-testid="ask-answer" aria-labelledby="answer-title">
      <h2 id="answer-title">{t('audit.answer')}</h2>
      <p class="answer-text">{answer.answer}</p>
      <p class="muted small" data-testid="llm-used">
        {answer.llm_used
          ? t(answer.cached ? 'audit.llmCached' : 'audit.llm')
          : answer.fallback_reason
            ? t('audit.noLlmBecause', { reason: answer.fallback_reason })
            : t('audit.noLlm')}
      </p>
      <h3>{t('audit.scope')}</h3>
      <ul class="scope-notes" data-testid="scope-notes">
        <li>
          {t('audit.timeScope', { range })}
          {q.time_range.phrase ? ` ${t('audit.fromPhrase', { phrase: q.time_range.phrase })}` : ''}
        </li>
        <li>
          {t('audit.shownOf', {
            shown: formatCount(q.events_shown),
            total: `${formatCount(answer.total_matched)}${answer.total_capped ? '+' : ''}`,
          })}
        </li>
        {q.excluded_services && (
          <li>
            {t('audit.leftOut', {
              services: q.excluded_services.services.join(', '),
              reason: q.excluded_services.reason,
            })}
          </li>
        )}
        {q.filters.map((f) => (
          <li key={`${f.field}:${String(f.value)}`}>
            {f.field}: {Array.isArray(f.value) ? f.value.join(', ') : f.value}
            {f.because ? ` (${f.because})` : ''}
          </li>
        ))}
        {q.notes.map((n) => (
          <li key={n}>{n}</li>
        ))}
      </ul>
      {answer.events.length > 0 && (
        <>
          <h3>{t('audit.cited')}</h3>
          <ul class="cited-events">
            {answer.events.map((e) => (
              <li key={e.id}>
                <button type="button" class="link-button" onClick={() => onOpen(e.id)}>
                  {e.operation}
                </button>{' '}
                <span class={outcomeClass(e.result)}>{e.result_raw || e.result}</span> · {e.actor} ·{' '}
                <time dateTime={e.timestamp}>{shownTime(e.timestamp)}</time>
              </li>
            ))}
          </ul>
        </>
      )}
    </article>
  );
}
