import type { BillingSubscription } from '../api/types.js';
import { t } from '../i18n/index.js';
import { RenewButton } from './renew-button.js';
import { canRenew, openInvoiceLink, subscriptionWords } from './subscription-words.js';

/**
 * A subscription's state as a pill, with "Pay the invoice" when one is open and "Renew" when it
 * may be renewed. `status`: the pill is announced (a live status).
 */
export function SubscriptionState({
  subscription: s,
  now,
  status,
}: {
  subscription: BillingSubscription;
  now: number;
  status?: boolean;
}) {
  const words = subscriptionWords(s, now);
  const pay = openInvoiceLink(s);
  return (
    <>
      <span
        class={`pill pill-${words.tone}`}
        role={status ? 'status' : undefined}
        data-testid="subscription-state"
      >
        <span class="dot" aria-hidden="true" />
        {words.text}
      </span>
      {pay && (
        <a class="button button-small" href={pay}>
          {t('billing.payInvoice')}
        </a>
      )}
      {canRenew(s, now) && <RenewButton subscriptionId={s.id} />}
    </>
  );
}
