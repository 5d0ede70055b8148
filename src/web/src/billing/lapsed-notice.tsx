/**
 * Under the composer when the hub refused a send because the subscription lapsed: when it
 * ended, in the reader's time, and a way to renew. The hub's `detail` names the API call to
 * renew with, which is for programs; its `lapsed_at` and `billing_subscription_id` say the same
 * for people. Without them (an older hub) the detail is shown as it is.
 */
import { useEffect } from 'preact/hooks';
import { useStore } from '../hooks.js';
import { formatDateTime } from '../lib/format.js';
import type { ApiError } from '../lib/problem.js';
import { Link } from '../router.js';
import { hubStore } from '../state/hub.js';
import { billingStore, loadMySubscriptions } from './billing-state.js';
import './billing.css';
import { t } from '../i18n/index.js';
import { RenewButton } from './renew-button.js';
import { currentSubscription } from './subscription-words.js';

export function LapsedNotice({ error }: { error: ApiError }) {
  const billing = useStore(billingStore);
  // A grant from the CLI lapses on a hub without billing too: then there is nothing to buy here.
  const billingOn = !!useStore(hubStore).plugins?.includes('billing');
  useEffect(() => {
    if (billingOn) void loadMySubscriptions();
  }, [billingOn]);
  const members = error.extras.members ?? {};
  const lapsedAt = typeof members.lapsed_at === 'string' ? Date.parse(members.lapsed_at) : Number.NaN;
  const paidId =
    typeof members.billing_subscription_id === 'string' ? members.billing_subscription_id : undefined;
  const current = currentSubscription(billing.subscriptions);
  const when = Number.isFinite(lapsedAt) ? formatDateTime(lapsedAt) : undefined;
  // The subscription the hub named; from a hub that names none, the one that was paying.
  const renewId =
    paidId ??
    (billingOn && !when && current && current.status !== 'pending_payment' && current.status !== 'canceled'
      ? current.id
      : undefined);
  let words: string;
  if (when && paidId) words = t('billing.lapsedRenew', { when });
  else if (when) words = t('billing.lapsedAsk', { when });
  else words = t('chat.notSentBecause', { reason: error.detail.replace(/\.$/, '') });
  return (
    <div class="composer-renew" data-testid="composer-lapsed">
      <p class="form-error">
        {words} {t('billing.textStillHere')}
      </p>
      {renewId ? (
        <RenewButton subscriptionId={renewId} label={t('billing.renewToMessage')} />
      ) : billingOn && !when ? (
        <Link href="/plans" class="button button-small">
          {t('billing.seePlans')}
        </Link>
      ) : null}
    </div>
  );
}
