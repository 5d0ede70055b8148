/**
 * Alerts and rules (issue 15 "Alerts and rules", from issue 14's `/api/alerts` and `/api/rules`):
 * the firings, newest first with Prev/Next, each opening the event that fired it; and the rules:
 * each in words, created and edited in a form that cannot produce an invalid condition
 * (rule-form.tsx), turned on and off, deleted after a confirmation. Both need an administrator
 * with AUTH_ENABLED (a 403 says so).
 */
import { useEffect, useState } from 'preact/hooks';
import { useStore, useTitle } from '../hooks.js';
import { auditJson, auditWords } from './audit-api.js';
import { auditFeaturesStore } from './audit-features.js';
import { AuditTable } from './audit-table.js';
import type { AlertPage, AlertRule, AlertRuleList } from './audit-types.js';
import { EventDrawer } from './event-drawer.js';
import { shownTime } from './format.js';
import { conditionWords, draftOf, emptyDraft, ruleBody } from './rule-draft.js';
import { RuleForm } from './rule-form.js';

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
        <AuditTable
          testId="alerts"
          caption="Alerts, newest first"
          columns={['Fired', 'Rule', 'Severity', 'Who', 'Matches', 'Event']}
        >
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
        </AuditTable>
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
  const { features, options } = useStore(auditFeaturesStore);
  const [rules, setRules] = useState<{ data?: AlertRuleList; error?: unknown }>({});
  const [tick, setTick] = useState(0);
  /** The form: closed, a new rule, or the rule being edited. */
  const [editing, setEditing] = useState<{ rule?: AlertRule } | undefined>();
  const [notice, setNotice] = useState<string>();
  const [actionError, setActionError] = useState<{ id: string; error: unknown }>();
  const [confirmDelete, setConfirmDelete] = useState<string>();
  useEffect(() => {
    const controller = new AbortController();
    auditJson<AlertRuleList>('/api/rules', { signal: controller.signal }).then(
      (data) => setRules({ data }),
      (error: unknown) => {
        if (!controller.signal.aborted) setRules({ error });
      },
    );
    return () => controller.abort();
  }, [tick]);
  const label = (s: string) => options?.service_labels[s] ?? s;
  const services = [...new Set([...(options?.services ?? []), ...(features?.sources ?? [])])];
  const hubTimeZone = features?.alerts?.time_zone;
  const act = (rule: AlertRule, change: Promise<unknown>, done: string) =>
    change.then(
      () => {
        setActionError(undefined);
        setConfirmDelete(undefined);
        setNotice(done);
        setTick((t) => t + 1);
      },
      (error: unknown) => setActionError({ id: rule.id, error }),
    );
  const toggle = (rule: AlertRule) =>
    act(
      rule,
      auditJson(`/api/rules/${encodeURIComponent(rule.id)}`, {
        method: 'PUT',
        body: ruleBody({ ...draftOf(rule), enabled: !rule.enabled }),
      }),
      `“${rule.name}” is ${rule.enabled ? 'off' : 'on'}.`,
    );
  const remove = (rule: AlertRule) =>
    act(
      rule,
      auditJson(`/api/rules/${encodeURIComponent(rule.id)}`, { method: 'DELETE' }),
      `“${rule.name}” was deleted.`,
    );

  return (
    <section class="panel" aria-labelledby="rules-title">
      <div class="audit-section-head">
        <h1 id="rules-title">Alert rules</h1>
        {!editing && (
          <button
            type="button"
            class="button button-small"
            onClick={() => {
              setNotice(undefined);
              setEditing({});
            }}
          >
            New rule
          </button>
        )}
      </div>
      {features && !features.alerts_enabled && (
        <p class="notice-info">
          Rules are kept but not evaluated: alerts are off on this hub (ALERTS_ENABLED).
        </p>
      )}
      <p class="muted small" role="status" data-testid="rules-notice">
        {notice ?? ''}
      </p>
      {editing && (
        <RuleForm
          key={editing.rule?.id ?? 'new'}
          initial={editing.rule ? draftOf(editing.rule) : emptyDraft()}
          ruleId={editing.rule?.id}
          services={services}
          serviceLabel={label}
          hubTimeZone={hubTimeZone}
          onSaved={(rule) => {
            setEditing(undefined);
            setNotice(`“${rule.name}” was saved.`);
            setTick((t) => t + 1);
          }}
          onCancel={() => setEditing(undefined)}
        />
      )}
      {rules.error !== undefined && (
        <p class="form-error" role="alert">
          {auditWords(rules.error)}
        </p>
      )}
      {rules.data && rules.data.data.length === 0 && <p class="audit-empty">No rules yet.</p>}
      {rules.data && rules.data.data.length > 0 && (
        <ul class="rules" data-testid="rules">
          {rules.data.data.map((r) => (
            <li key={r.id} data-rule-id={r.id}>
              <h2>
                {r.name} <span class={`severity severity-${r.severity}`}>{r.severity}</span>
                {!r.enabled && <span class="muted small"> (off)</span>}
              </h2>
              {r.description && <p>{r.description}</p>}
              <p class="rule-words">{conditionWords(r.condition, label)}</p>
              <div class="dialog-buttons">
                <button
                  type="button"
                  class="button button-secondary button-small"
                  onClick={() => {
                    setNotice(undefined);
                    setEditing({ rule: r });
                  }}
                >
                  Edit<span class="visually-hidden"> {r.name}</span>
                </button>
                <button type="button" class="button button-secondary button-small" onClick={() => toggle(r)}>
                  {r.enabled ? 'Turn off' : 'Turn on'}
                  <span class="visually-hidden"> {r.name}</span>
                </button>
                {confirmDelete === r.id ? (
                  <>
                    <button type="button" class="button button-small button-danger" onClick={() => remove(r)}>
                      Yes, delete {r.name}
                    </button>
                    <button
                      type="button"
                      class="button button-secondary button-small"
                      onClick={() => setConfirmDelete(undefined)}
                    >
                      Keep it
                    </button>
                  </>
                ) : (
                  <button
                    type="button"
                    class="button button-secondary button-small"
                    onClick={() => setConfirmDelete(r.id)}
                  >
                    Delete<span class="visually-hidden"> {r.name}</span>
                  </button>
                )}
              </div>
              {actionError?.id === r.id && (
                <p class="form-error" role="alert">
                  {auditWords(actionError.error)}
                </p>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
