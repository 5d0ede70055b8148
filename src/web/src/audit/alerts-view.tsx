/**
 * Alerts and rules (issue 15 "Alerts and rules", from issue 14's `/api/alerts` and `/api/rules`):
 * the firings, newest first with Prev/Next, each opening the event that fired it; and the rules
 * as they stand. Both need an administrator with AUTH_ENABLED (a 403 says so).
 */
import { useEffect, useState } from 'preact/hooks';
import { useTitle } from '../hooks.js';
import { auditJson, auditWords } from './audit-api.js';
import type { AlertPage, AlertRuleList } from './audit-types.js';
import { EventDrawer } from './event-drawer.js';
import { shownTime } from './format.js';

export function AlertsView() {
  useTitle('Audit alerts');
  const [cursor, setCursor] = useState<string>();
  const [page, setPage] = useState<{ data?: AlertPage; error?: unknown }>({});
  const [open, setOpen] = useState<string>();
  useEffect(() => {
    const controller = new AbortController();
    const q = cursor ? `?cursor=${encodeURIComponent(cursor)}` : '';
    auditJson<AlertPage>(`/api/alerts${q}`, { signal: controller.signal }).then(
      (data) => setPage({ data }),
      (error: unknown) => {
        if (!controller.signal.aborted) setPage({ error });
      },
    );
    return () => controller.abort();
  }, [cursor]);
  return (
    <section class="panel" aria-labelledby="alerts-title">
      <h1 id="alerts-title">Alerts</h1>
      {page.error !== undefined && (
        <p class="form-error" role="alert">
          {auditWords(page.error)}
        </p>
      )}
      {page.data && page.data.data.length === 0 && <p class="audit-empty">No rule has fired.</p>}
      {page.data && page.data.data.length > 0 && (
        <div class="audit-table-wrap">
          <table class="audit-table" data-testid="alerts">
            <caption class="visually-hidden">Alerts, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Fired</th>
                <th scope="col">Rule</th>
                <th scope="col">Severity</th>
                <th scope="col">Who</th>
                <th scope="col">Matches</th>
                <th scope="col">Event</th>
              </tr>
            </thead>
            <tbody>
              {page.data.data.map((a) => (
                <tr key={a.id}>
                  <td data-label="Fired">{shownTime(a.fired_at)}</td>
                  <td data-label="Rule">{a.rule.name}</td>
                  <td data-label="Severity">
                    <span class={`severity severity-${a.severity}`}>{a.severity}</span>
                  </td>
                  <td data-label="Who">{a.key === '*' ? 'anyone' : a.key}</td>
                  <td data-label="Matches">
                    {a.match_count} in {a.window}
                  </td>
                  <td data-label="Event">
                    <button type="button" class="link-button" onClick={() => setOpen(a.event.id)}>
                      {a.event.operation}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {page.data && (
        <nav class="audit-pager" aria-label="Pages of alerts">
          <button
            type="button"
            class="button button-secondary"
            disabled={!page.data.prev_cursor}
            onClick={() => setCursor(page.data?.prev_cursor ?? undefined)}
          >
            ← Newer
          </button>
          <button
            type="button"
            class="button button-secondary"
            disabled={!page.data.next_cursor}
            onClick={() => setCursor(page.data?.next_cursor ?? undefined)}
          >
            Older →
          </button>
        </nav>
      )}
      {open && <EventDrawer id={open} onClose={() => setOpen(undefined)} onChanged={() => {}} />}
    </section>
  );
}

export function RulesView() {
  useTitle('Alert rules');
  const [rules, setRules] = useState<{ data?: AlertRuleList; error?: unknown }>({});
  useEffect(() => {
    auditJson<AlertRuleList>('/api/rules').then(
      (data) => setRules({ data }),
      (error: unknown) => setRules({ error }),
    );
  }, []);
  return (
    <section class="panel" aria-labelledby="rules-title">
      <h1 id="rules-title">Alert rules</h1>
      {rules.error !== undefined && (
        <p class="form-error" role="alert">
          {auditWords(rules.error)}
        </p>
      )}
      {rules.data && rules.data.data.length === 0 && <p class="audit-empty">No rules yet.</p>}
      {rules.data && rules.data.data.length > 0 && (
        <ul class="rules" data-testid="rules">
          {rules.data.data.map((r) => (
            <li key={r.id}>
              <h2>
                {r.name} <span class={`severity severity-${r.severity}`}>{r.severity}</span>
                {!r.enabled && <span class="muted small"> (off)</span>}
              </h2>
              {r.description && <p>{r.description}</p>}
              <pre class="rule-condition">{JSON.stringify(r.condition, null, 2)}</pre>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
