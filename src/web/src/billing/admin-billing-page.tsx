/**
 * `/admin/billing` (admins): every subscriber's subscriptions, the plans with a way to retire
 * one, and the recent payments: the latest invoice of each subscription (the API lists no
 * invoice history yet). The hub decides who may see this; the page only asks.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { getJson, request } from '../api/client.js';
import type { BillingPlan, BillingSubscription } from '../api/types.js';
import { SignIn } from '../chat/sign-in.js';
import { useStore, useTitle } from '../hooks.js';
import { formatDateTime } from '../lib/format.js';
import type { ApiError } from '../lib/problem.js';
import { sessionStore } from '../state/session.js';
import './billing.css';
import { DataTable } from '../components/data-table.js';
import { FormAlert } from '../components/form-alert.js';
import { LoadError, Loading } from '../components/load-states.js';
import { t, tList } from '../i18n/index.js';
import { BillingOff } from './billing-off.js';
import { billingWords, planPeriod, planPrice, subscriptionWords } from './subscription-words.js';

interface AdminData {
  subscriptions: BillingSubscription[];
  plans: BillingPlan[];
}

const when = (iso: string | null | undefined) => (iso ? formatDateTime(Date.parse(iso)) : '—');

async function loadAdminData(token: string): Promise<AdminData> {
  const [subscriptions, plans] = await Promise.all([
    getJson<{ data: BillingSubscription[] }>('/api/v1/billing/subscriptions?all=true', { token }),
    getJson<{ data: BillingPlan[] }>('/api/v1/billing/plans?all=true', { token }),
  ]);
  return { subscriptions: subscriptions.data, plans: plans.data };
}

function Table({ head, ...props }: { caption: string; head: string[]; children: ComponentChildren }) {
  return <DataTable wrapClass="table-scroll" tableClass="billing-table" columns={head} {...props} />;
}

export function AdminBillingPage({ billingOn }: { billingOn: boolean }) {
  const { session, notice } = useStore(sessionStore);
  const [data, setData] = useState<AdminData>();
  const [error, setError] = useState<ApiError | Error>();
  const [retireError, setRetireError] = useState<string>();
  const token = session?.token;
  useTitle(t('header.billing'));

  const reload = async () => {
    if (!token) return;
    try {
      setData(await loadAdminData(token));
      setError(undefined);
    } catch (caught) {
      setError(caught as ApiError);
    }
  };
  useEffect(() => {
    if (billingOn && token) void reload();
  }, [billingOn, token]);

  if (!billingOn) {
    return <BillingOff heading={t('billing.offHeading')} text={t('billing.offText')} />;
  }
  if (!session) return <SignIn notice={notice} heading={t('billing.signInAdmin')} />;

  const retire = async (plan: BillingPlan) => {
    if (!confirm(t('billing.retireConfirm', { name: plan.name }))) return;
    setRetireError(undefined);
    try {
      await request(`/api/v1/billing/plans/${encodeURIComponent(plan.id)}/retire`, { method: 'POST', token });
      await reload();
    } catch (caught) {
      setRetireError(billingWords(caught));
    }
  };

  let body: ComponentChildren;
  if (error && !data) {
    body = <LoadError error={error} words={billingWords} onRetry={() => void reload()} small />;
  } else if (!data) {
    body = <Loading>{t('common.loading')}</Loading>;
  } else {
    const plan = (id: string) => data.plans.find((p) => p.id === id);
    const planName = (id: string) => plan(id)?.name ?? id;
    const invoices = data.subscriptions
      .filter((s) => s.invoice_id)
      .sort((a, b) => b.created_at.localeCompare(a.created_at))
      .slice(0, 50);
    body = (
      <>
        <section aria-labelledby="admin-subscriptions" class="panel">
          <h2 id="admin-subscriptions">{t('billing.subscribers')}</h2>
          {data.subscriptions.length === 0 ? (
            <p class="muted">{t('billing.noSubscribers')}</p>
          ) : (
            <Table
              caption={t('billing.subscriptionsCaption')}
              head={tList('billing.subscriber', 'billing.plan', 'billing.stateHead', 'billing.paidUntil')}
            >
              {data.subscriptions.map((s) => (
                <tr key={s.id} data-subscription-id={s.id} data-status={s.status}>
                  <td data-testid="subscriber">{s.subscriber}</td>
                  <td>{planName(s.plan_id)}</td>
                  <td>{subscriptionWords(s).text}</td>
                  <td>{when(s.current_period_end)}</td>
                </tr>
              ))}
            </Table>
          )}
        </section>
        <section aria-labelledby="admin-plans" class="panel">
          <h2 id="admin-plans">{t('header.plans')}</h2>
          <FormAlert message={retireError} />
          {data.plans.length === 0 ? (
            <p class="muted">
              {t('billing.noPlansAdd')} <code>meshhub plan add</code>.
            </p>
          ) : (
            <Table
              caption={t('billing.plansCaption')}
              head={tList(
                'billing.plan',
                'billing.price',
                'billing.period',
                'mesh.nodes',
                'billing.stateHead',
              )}
            >
              {data.plans.map((p) => (
                <tr key={p.id} data-plan-id={p.id}>
                  <td>
                    {p.name} <span class="muted small">({p.id})</span>
                  </td>
                  <td>{planPrice(p)}</td>
                  <td>{planPeriod(p)}</td>
                  <td>{p.nodes === 'all' ? t('billing.all') : p.nodes.join(', ')}</td>
                  <td>
                    {p.active === false ? (
                      <span class="muted">{t('billing.retired')}</span>
                    ) : (
                      <>
                        {t('billing.onOffer')}{' '}
                        <button
                          type="button"
                          class="link-button small"
                          onClick={() => void retire(p)}
                          aria-label={t('billing.retireNamed', { name: p.name })}
                        >
                          {t('billing.retire')}
                        </button>
                      </>
                    )}
                  </td>
                </tr>
              ))}
            </Table>
          )}
        </section>
        <section aria-labelledby="admin-payments" class="panel">
          <h2 id="admin-payments">{t('billing.payments')}</h2>
          {invoices.length === 0 ? (
            <p class="muted">{t('billing.noInvoices')}</p>
          ) : (
            <Table
              caption={t('billing.invoicesCaption')}
              head={tList(
                'billing.subscriber',
                'billing.plan',
                'billing.amount',
                'billing.invoice',
                'billing.stateHead',
              )}
            >
              {invoices.map((s) => {
                const p = plan(s.plan_id);
                return (
                  <tr key={s.invoice_id} data-invoice-id={s.invoice_id}>
                    <td>{s.subscriber}</td>
                    <td>{planName(s.plan_id)}</td>
                    <td>{p ? planPrice(p) : '—'}</td>
                    <td>
                      <code>{s.invoice_id}</code>
                    </td>
                    <td>
                      {s.invoice_status === 'settled'
                        ? t('billing.paid')
                        : (s.payment_note ?? s.invoice_status)}
                    </td>
                  </tr>
                );
              })}
            </Table>
          )}
        </section>
      </>
    );
  }

  return (
    <div class="billing-page">
      <h1>{t('header.billing')}</h1>
      {body}
    </div>
  );
}
