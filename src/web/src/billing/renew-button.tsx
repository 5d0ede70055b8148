/** "Renew": an invoice for the next period, then BTCPay's checkout in this tab. */
import { useState } from 'preact/hooks';
import { t } from '../i18n/index.js';
import { openCheckout, renewSubscription } from './billing-state.js';
import { billingWords } from './subscription-words.js';

export function RenewButton({ subscriptionId, label }: { subscriptionId: string; label?: string }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const renew = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const link = await renewSubscription(subscriptionId);
      if (!openCheckout(link)) setError(t('billing.noInvoiceAddress'));
    } catch (caught) {
      setError(billingWords(caught));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button
        type="button"
        class="button button-small"
        disabled={busy}
        onClick={() => void renew()}
        data-testid="renew"
      >
        {busy ? t('billing.opening') : (label ?? t('billing.renew'))}
      </button>
      {error && (
        <span class="form-error" role="alert">
          {error}
        </span>
      )}
    </>
  );
}
