/**
 * `/plans`: the plans on offer (name, price, period, nodes), "Pay" that makes a subscription and
 * goes to BTCPay's checkout, and the signed-in subscriber's subscriptions with their state.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { BillingPlan } from '../api/types.js';
import { SignIn } from '../chat/sign-in.js';
import { useNow, useStore, useTitle } from '../hooks.js';
import { displayName } from '../lib/mesh-state.js';
import { meshStore } from '../state/mesh.js';
import { sessionStore } from '../state/session.js';
import { billingStore, buyPlan, followSubscriptions, loadPlans, openCheckout } from './billing-state.js';
import './billing.css';
import { FormAlert } from '../components/form-alert.js';
import { LoadError, Loading } from '../components/load-states.js';
import { t } from '../i18n/index.js';
import { BillingOff } from './billing-off.js';
import { SubscriptionState } from './subscription-state.js';
import { billingWords, planPeriod, planPrice } from './subscription-words.js';

function PlanNodes({ nodes }: { nodes: BillingPlan['nodes'] }) {
  const mesh = useStore(meshStore);
  if (nodes === 'all') return <>{t('billing.allNodes')}</>;
  return <>{nodes.map((id) => displayName(mesh.mesh.nodes.get(id), id)).join(', ')}</>;
}

function PayButton({ plan, signedIn }: { plan: BillingPlan; signedIn: boolean }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  if (!signedIn) return null;
  const pay = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const subscription = await buyPlan(plan.id);
      if (!openCheckout(subscription.checkout_link)) {
        setError(t('billing.noPayAddress'));
        setBusy(false);
      }
    } catch (caught) {
      setError(billingWords(caught));
      setBusy(false);
    }
  };
  return (
    <div class="plan-pay">
      <button
        type="button"
        class="button"
        disabled={busy}
        onClick={() => void pay()}
        aria-label={t('billing.payFor', {
          name: plan.name,
          price: planPrice(plan),
          period: planPeriod(plan),
        })}
      >
        {busy ? t('billing.opening') : t('billing.pay')}
      </button>
      <FormAlert message={error} />
    </div>
  );
}

function MySubscriptions() {
  const billing = useStore(billingStore);
  const now = useNow(60_000);
  useEffect(() => followSubscriptions(), []);
  if (billing.subscriptionsError && !billing.subscriptionsLoaded) {
    return (
      <p class="form-error" role="alert">
        {billingWords(billing.subscriptionsError)}
      </p>
    );
  }
  if (!billing.subscriptionsLoaded) {
    return (
      <p class="loading" role="status">
        {t('billing.loadingMine')}
      </p>
    );
  }
  if (billing.subscriptions.length === 0) return <p class="muted">{t('billing.noneMine')}</p>;
  const planName = (id: string) => billing.plans.find((p) => p.id === id)?.name ?? id;
  return (
    <ul class="subscriptions" aria-live="polite">
      {billing.subscriptions.map((s) => {
        return (
          <li key={s.id} class="subscription" data-subscription-id={s.id} data-status={s.status}>
            <span class="subscription-plan">{planName(s.plan_id)}</span>
            <SubscriptionState subscription={s} now={now} />
          </li>
        );
      })}
    </ul>
  );
}

export function PlansPage({ billingOn }: { billingOn: boolean }) {
  const billing = useStore(billingStore);
  const { session, notice } = useStore(sessionStore);
  useTitle(t('header.plans'));
  useEffect(() => {
    if (billingOn) void loadPlans();
  }, [billingOn]);
  if (!billingOn) {
    return <BillingOff heading={t('billing.noPlansHeading')} text={t('billing.noPlansText')} />;
  }

  let plans: ComponentChildren;
  if (billing.plansError && !billing.plansLoaded) {
    plans = (
      <LoadError error={billing.plansError} words={billingWords} onRetry={() => void loadPlans()} small />
    );
  } else if (!billing.plansLoaded) {
    plans = <Loading>{t('billing.loadingPlans')}</Loading>;
  } else if (billing.plans.length === 0) {
    plans = <p class="muted">{t('billing.noOffer')}</p>;
  } else {
    plans = (
      <ul class="plan-list">
        {billing.plans.map((plan) => (
          <li key={plan.id} class="plan panel" data-plan-id={plan.id}>
            <h2 class="plan-name">{plan.name}</h2>
            <p class="plan-price">
              <strong>{planPrice(plan)}</strong> {t('billing.forPeriod', { period: planPeriod(plan) })}
            </p>
            <p class="plan-nodes muted">
              <PlanNodes nodes={plan.nodes} />
            </p>
            <PayButton plan={plan} signedIn={!!session} />
          </li>
        ))}
      </ul>
    );
  }

  return (
    <div class="billing-page">
      <h1>{t('header.plans')}</h1>
      <p class="muted">{t('billing.plansIntro')}</p>
      {plans}
      {session ? (
        <section aria-labelledby="my-subscriptions-heading" class="panel my-subscriptions">
          <h2 id="my-subscriptions-heading">{t('billing.yourSubscriptions')}</h2>
          <MySubscriptions />
        </section>
      ) : (
        <SignIn notice={notice} heading={t('billing.signInToBuy')} />
      )}
    </div>
  );
}
