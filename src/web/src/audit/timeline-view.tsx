/**
 * Issue 29, an actor's timeline (`/audit/timeline?actor=…&days=30`): every event of one actor
 * across services, newest first (failures marked), a small chart of events per UTC day stacked
 * by service with the failed ones in red, and the event drawer with its pivots. Everything the
 * page shows lives in the URL (actor, days, cursor, open event), so it can be shared.
 */
import { useEffect, useState } from 'preact/hooks';
import type { z } from 'zod';
import type { timelineSchema } from '../../../../plugins/audit/timeline/schemas.js';
import { useStore, useTitle } from '../hooks.js';
import { t } from '../i18n/index.js';
import { Link, navigate } from '../router.js';
import { auditJson, auditWords } from './audit-api.js';
import { auditFeaturesStore } from './audit-features.js';
import { queryText } from './audit-filters.js';
import { EventDrawer } from './event-drawer.js';
import { EventTable } from './event-table.js';
import './timeline-view.css';

type Timeline = z.output<typeof timelineSchema>;

const DAY_CHOICES = [7, 30, 90] as const;
const DEFAULT_DAYS = 30;
const DAY_MS = 86_400_000;
/** Service colours in the chart, in the order the totals list the services. */
const PALETTE = ['#2f6fde', '#17a398', '#c98b12', '#8a5cd1', '#d1497b', '#4c8f2f', '#6b7a8f', '#b5651d'];

interface TimelineState {
  actor: string;
  days: number;
  /** The window's last UTC day (YYYY-MM-DD); absent: today. */
  until?: string;
  cursor?: string;
  event?: string;
}

function parseTimeline(search: string): TimelineState {
  const p = new URLSearchParams(search);
  const days = Number(p.get('days'));
  return {
    actor: p.get('actor')?.trim() ?? '',
    days: Number.isInteger(days) && days >= 1 && days <= 90 ? days : DEFAULT_DAYS,
    ...(/^\d{4}-\d{2}-\d{2}$/.test(p.get('until') ?? '') ? { until: p.get('until')! } : {}),
    ...(p.get('cursor') ? { cursor: p.get('cursor')! } : {}),
    ...(p.get('event') ? { event: p.get('event')! } : {}),
  };
}

function timelineQuery(s: TimelineState): string {
  const days = s.days !== DEFAULT_DAYS ? String(s.days) : undefined;
  return queryText(new URLSearchParams(), [
    ['actor', s.actor],
    ['days', days],
    ['until', s.until],
    ['cursor', s.cursor],
    ['event', s.event],
  ]);
}

const pageHref = (s: TimelineState) => `/audit/timeline${timelineQuery(s)}`;
const go = (s: TimelineState, replace = false) => navigate(pageHref(s), { replace });

export function TimelineView({ search }: { search: string }) {
  const current = parseTimeline(search);
  const { event: openEvent, ...withoutEvent } = current;
  const key = timelineQuery(withoutEvent);
  const [state, setState] = useState<{ key: string; data?: Timeline; error?: unknown }>({ key: '' });
  const [reload, setReload] = useState(0);
  const { options } = useStore(auditFeaturesStore);
  useTitle(
    current.actor ? t('audit.timeline.title', { actor: current.actor }) : t('audit.timeline.pageTitle'),
  );

  useEffect(() => {
    const s = parseTimeline(key);
    if (!s.actor) return;
    const controller = new AbortController();
    const params = new URLSearchParams({ actor: s.actor, days: String(s.days) });
    if (s.until) params.set('until', s.until);
    if (s.cursor) params.set('cursor', s.cursor);
    auditJson<Timeline>(`/api/actors/timeline?${params}`, { signal: controller.signal }).then(
      (data) => setState({ key, data }),
      (error: unknown) => {
        if (!controller.signal.aborted) setState({ key, error });
      },
    );
    return () => controller.abort();
  }, [key, reload]);

  const drawer = openEvent ? (
    <EventDrawer
      id={openEvent}
      onClose={() => go(withoutEvent, true)}
      onChanged={() => setReload((n) => n + 1)}
    />
  ) : null;
  const data = state.key === key ? state.data : undefined;
  const error = state.key === key ? state.error : undefined;
  return (
    <div class="audit-timeline">
      <h1>
        {current.actor ? t('audit.timeline.title', { actor: current.actor }) : t('audit.timeline.pageTitle')}
      </h1>
      <TimelineForm key={key} current={current} />
      {!current.actor ? (
        <p class="muted">{t('audit.timeline.noActor')}</p>
      ) : error !== undefined ? (
        <p class="form-error" role="alert">
          {auditWords(error)}
        </p>
      ) : !data ? (
        <p class="loading" role="status">
          {t('common.loading')}
        </p>
      ) : (
        <>
          <p class="muted small" data-testid="timeline-totals">
            {t('audit.timeline.totals', { events: data.totals.events, failures: data.totals.failures })}
          </p>
          {data.totals.events > 0 && <DayChart data={data} labels={options?.service_labels} />}
          <EventTable
            events={data.data}
            labels={options?.service_labels}
            onOpen={(id) => go({ ...current, event: id })}
          />
          {data.data.length === 0 && (
            <p class="audit-empty" role="status">
              {t('audit.timeline.empty')}
            </p>
          )}
          <nav class="audit-pager" aria-label={t('audit.pagesOfEvents')}>
            {[
              { cursor: data.prev_cursor, label: `← ${t('audit.newer')}` },
              { cursor: data.next_cursor, label: `${t('audit.older')} →` },
            ].map(({ cursor, label }) =>
              cursor ? (
                <Link
                  key={label}
                  class="button button-secondary"
                  href={pageHref({ ...withoutEvent, cursor })}
                >
                  {label}
                </Link>
              ) : null,
            )}
          </nav>
        </>
      )}
      {drawer}
    </div>
  );
}

function TimelineForm({ current }: { current: TimelineState }) {
  const [actor, setActor] = useState(current.actor);
  const [days, setDays] = useState(current.days);
  return (
    <form
      class="panel audit-filters timeline-form"
      onSubmit={(e) => {
        e.preventDefault();
        // Another actor starts from today; the same actor keeps the window's last day.
        const until = actor.trim() === current.actor ? current.until : undefined;
        go({ actor: actor.trim(), days, ...(until ? { until } : {}) });
      }}
    >
      <label>
        {t('audit.timeline.actor')}{' '}
        <input type="text" value={actor} onInput={(e) => setActor(e.currentTarget.value)} required />
      </label>
      <label>
        {t('audit.timeline.days')}{' '}
        <select value={String(days)} onChange={(e) => setDays(Number(e.currentTarget.value))}>
          {[...new Set([...DAY_CHOICES, current.days])]
            .sort((a, b) => a - b)
            .map((n) => (
              <option key={n} value={String(n)}>
                {t('audit.timeline.lastDays', { days: n })}
              </option>
            ))}
        </select>
      </label>
      <button type="submit" class="button">
        {t('audit.timeline.show')}
      </button>
    </form>
  );
}

/** Events per UTC day stacked by service; each day's failures as a red bar beside it. */
function DayChart({ data, labels }: { data: Timeline; labels?: Record<string, string> | undefined }) {
  const services = data.totals.services.map((s) => s.service);
  const colour = (service: string) => PALETTE[services.indexOf(service) % PALETTE.length];
  const start = Date.parse(data.window.start);
  const days = Array.from({ length: data.window.days }, (_, i) =>
    new Date(start + i * DAY_MS).toISOString().slice(0, 10),
  );
  const byDay = new Map<string, typeof data.counts>();
  for (const c of data.counts) byDay.set(c.day, [...(byDay.get(c.day) ?? []), c]);
  const max = Math.max(1, ...days.map((d) => (byDay.get(d) ?? []).reduce((n, c) => n + c.events, 0)));
  const width = 600;
  const height = 120;
  const slot = width / days.length;
  const bar = Math.max(2, slot * 0.6);
  const scale = (n: number) => (n / max) * (height - 4);
  return (
    <figure class="timeline-chart" data-testid="timeline-chart">
      <svg
        viewBox={`0 0 ${width} ${height}`}
        role="img"
        aria-label={t('audit.timeline.chart', { days: data.window.days })}
        preserveAspectRatio="none"
      >
        {days.map((day, i) => {
          const counts = byDay.get(day) ?? [];
          const events = counts.reduce((n, c) => n + c.events, 0);
          const failures = counts.reduce((n, c) => n + c.failures, 0);
          let y = height;
          return (
            <g key={day} data-day={day}>
              <title>{t('audit.timeline.dayTotal', { day, events, failures })}</title>
              {counts.map((c) => {
                const h = scale(c.events);
                y -= h;
                return (
                  <rect
                    key={c.service}
                    data-service={c.service}
                    x={i * slot}
                    y={y}
                    width={bar}
                    height={h}
                    fill={colour(c.service)}
                  />
                );
              })}
              {failures > 0 && (
                <rect
                  class="timeline-failures"
                  data-failures={failures}
                  x={i * slot + bar}
                  y={height - scale(failures)}
                  width={Math.max(1, slot - bar - 1)}
                  height={scale(failures)}
                  fill="var(--danger, #c62828)"
                />
              )}
            </g>
          );
        })}
      </svg>
      <figcaption class="timeline-legend">
        {data.totals.services.map((s) => (
          <span key={s.service} class="small">
            <span class="timeline-swatch" style={{ background: colour(s.service) }} />
            {labels?.[s.service] ?? s.service}: {s.events}
            {s.failures > 0 && (
              <span class="outcome outcome-failure">
                {' '}
                {s.failures} {t('audit.timeline.failed')}
              </span>
            )}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}
