/**
 * The chat's subscription bar (when the hub runs the billing plugin): the state of the
 * subscription that matters now and its end date, "Renew" in the last week and after it ended,
 * and the way to the plans when there is none.
 */
import { useEffect } from 'preact/hooks';
import { useNow, useStore } from '../hooks.js';
import { Link } from '../router.js';
import { billingStore, followSubscriptions } from './billing-state.js';
import './billing.css';
import { t } from '../i18n/index.js';
import { SubscriptionState } from './subscription-state.js';
import { billingWords, currentSubscription } from './subscription-words.js';

export function SubscriptionBar() {
  const billing = useStore(billingStore);
  const now = useNow(60_000);
  useEffect(() => followSubscriptions(), []);
  if (!billing.subscriptionsLoaded) {
    // Always there, so the chat below does not jump when the answer comes.
    return (
      <section class="subscription-bar" aria-label={t('billing.yourSubscription')} aria-busy="true">
        <span class="muted small">
          {billing.subscriptionsError ? billingWords(billing.subscriptionsError) : t('billing.checking')}
        </span>
      </section>
    );
  }
  const current = currentSubscription(billing.subscriptions);
  if (!current) {
    return (
      <section
        class="subscription-bar"
        aria-label={t('billing.yourSubscription')}
        data-testid="subscription-bar"
      >
        <span>{t('billing.noPaid')}</span>
        <Link href="/plans" class="button button-small">
          {t('billing.seePlans')}
        </Link>
      </section>
    );
  }
  return (
    <section
      class="subscription-bar"
      aria-label={t('billing.yourSubscription')}
      data-testid="subscription-bar"
      data-status={current.status}
    >
      <SubscriptionState subscription={current} now={now} status />
      <Link href="/plans" class="link-button small">
        {t('header.plans')}
      </Link>
    </section>
  );
}
