/**
 * Alerts and rules (issue 15 "Alerts and rules", from issue 14's `/api/alerts` and `/api/rules`):
 * the firings, newest first with Prev/Next, each opening the event that fired it; and the rules:
 * each in words, created and edited in a form that cannot produce an invalid condition
 * (rule-form.tsx), turned on and off, deleted after a confirmation. Both need an administrator
 * with AUTH_ENABLED (a 403 says so).
 */
import { useEffect, useState } from 'preact/hooks';
import { useStore, useTitle } from '../hooks.js';
import { t, tList } from '../i18n/index.js';
import { auditJson, auditWords } from './audit-api.js';
import { auditFeaturesStore } from './audit-features.js';
import { AuditTable } from './audit-table.js';
import type { AlertPage, AlertRule, AlertRuleList } from './audit-types.js';
import { EventDrawer } from './event-drawer.js';
import { AuditAlert, SmallButton } from './form-parts.js';
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
      <h1 id="alerts-title">{t('header.alerts')}</h1>
      <AuditAlert error={page.error} />
      {page.data && page.data.data.length === 0 && <p class="audit-empty">{t('audit.noAlerts')}</p>}
      {page.data && page.data.data.length > 0 && (
        <AuditTable
          testId="alerts"
          caption={t('audit.alertsCaption')}
          columns={tList(
            'audit.fired',
            'audit.rule',
            'audit.severity',
            'audit.who',
            'audit.matches',
            'audit.event',
          )}
        >
          {page.data.data.map((a) => (
            <tr key={a.id}>
              <td data-label={t('audit.fired')}>{shownTime(a.fired_at)}</td>
              <td data-label={t('audit.rule')}>{a.rule.name}</td>
              <td data-label={t('audit.severity')}>
                <span class={`severity severity-${a.severity}`}>{a.severity}</span>
              </td>
              <td data-label={t('audit.who')}>{a.key === '*' ? t('audit.anyone') : a.key}</td>
              <td data-label={t('audit.matches')}>
                {t('audit.countIn', { count: a.match_count, window: a.window })}
              </td>
              <td data-label={t('audit.event')}>
                <button type="button" class="link-button" onClick={() => setOpen(a.event.id)}>
                  {a.event.operation}
                </button>
              </td>
            </tr>
          ))}
        </AuditTable>
      )}
      {page.data && (
        <nav class="audit-pager" aria-label={t('audit.alertPages')}>
          <button
            type="button"
            class="button button-secondary"
            disabled={!page.data.prev_cursor}
            onClick={() => setCursor(page.data?.prev_cursor ?? undefined)}
          >
            ← {t('audit.newer')}
          </button>
          <button
            type="button"
            class="button button-secondary"
            disabled={!page.data.next_cursor}
            onClick={() => setCursor(page.data?.next_cursor ?? undefined)}
          >
            {t('audit.older')} →
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
      t(rule.enabled ? 'audit.ruleOff' : 'audit.ruleOn', { name: rule.name }),
    );
  const remove = (rule: AlertRule) =>
    act(
      rule,
      auditJson(`/api/rules/${encodeURIComponent(rule.id)}`, { method: 'DELETE' }),
      t('audit.ruleDeleted', { name: rule.name }),
    );

  return (
    <section class="panel" aria-labelledby="rules-title">
      <div class="audit-section-head">
        <h1 id="rules-title">{t('audit.alertRules')}</h1>
        {!editing && (
          <button
            type="button"
            class="button button-small"
            onClick={() => {
              setNotice(undefined);
              setEditing({});
            }}
          >
            {t('mesh.alerts.newRule')}
          </button>
        )}
      </div>
      {features && !features.alerts_enabled && <p class="notice-info">{t('audit.alertsOff')}</p>}
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
            setNotice(t('audit.ruleSaved', { name: rule.name }));
            setTick((t) => t + 1);
          }}
          onCancel={() => setEditing(undefined)}
        />
      )}
      <AuditAlert error={rules.error} />
      {rules.data && rules.data.data.length === 0 && <p class="audit-empty">{t('mesh.alerts.noRules')}</p>}
      {rules.data && rules.data.data.length > 0 && (
        <ul class="rules" data-testid="rules">
          {rules.data.data.map((r) => (
            <li key={r.id} data-rule-id={r.id}>
              <h2>
                {r.name} <span class={`severity severity-${r.severity}`}>{r.severity}</span>
                {!r.enabled && <span class="muted small"> {t('audit.offMark')}</span>}
              </h2>
              {r.description && <p>{r.description}</p>}
              {r.sigma ? (
                <p class="rule-words" data-testid="sigma-rule">
                  {t('audit.sigmaRule', { file: r.sigma.file })}
                </p>
              ) : (
                <p class="rule-words">{conditionWords(r.condition, label)}</p>
              )}
              {!r.sigma && (
                <div class="dialog-buttons">
                  <SmallButton
                    onClick={() => {
                      setNotice(undefined);
                      setEditing({ rule: r });
                    }}
                  >
                    {t('audit.edit')}
                    <span class="visually-hidden"> {r.name}</span>
                  </SmallButton>
                  <SmallButton onClick={() => toggle(r)}>
                    {r.enabled ? t('audit.turnOff') : t('audit.turnOn')}
                    <span class="visually-hidden"> {r.name}</span>
                  </SmallButton>
                  {confirmDelete === r.id ? (
                    <>
                      <SmallButton danger onClick={() => remove(r)}>
                        {t('audit.yesDelete', { name: r.name })}
                      </SmallButton>
                      <SmallButton onClick={() => setConfirmDelete(undefined)}>
                        {t('audit.keepIt')}
                      </SmallButton>
                    </>
                  ) : (
                    <SmallButton onClick={() => setConfirmDelete(r.id)}>
                      {t('mesh.alerts.delete')}
                      <span class="visually-hidden"> {r.name}</span>
                    </SmallButton>
                  )}
                </div>
              )}
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
