/** The strips under the header: simulator, lost connection, a new hub version. */
import { useStore } from '../hooks.js';
import { t } from '../i18n/index.js';
import { hubStore } from '../state/hub.js';

export function Banners() {
  const hub = useStore(hubStore);
  const upstream = hub.mode === 'upstream';
  // An upstream that waits for a sign-in has no stream to be connecting: the page asks for one.
  const waiting = hub.signInToRead === true;
  const reconnecting =
    !waiting && (hub.connection === 'reconnecting' || (hub.connection === 'connecting' && hub.everConnected));
  return (
    <div class="banners">
      <div role="status" aria-live="polite">
        {reconnecting && (
          <p class="banner banner-warn" data-testid="reconnecting">
            <span class="spinner" aria-hidden="true" />
            {t(upstream ? 'banner.reconnectingUpstream' : 'banner.reconnectingHub')}
          </p>
        )}
        {!waiting && hub.connection === 'connecting' && !hub.everConnected && (
          <p class="banner banner-quiet">{t('banner.connecting')}</p>
        )}
      </div>
      {hub.radio?.simulated && (
        <p class="banner banner-sim" data-testid="simulator-banner">
          <strong>{t('banner.simulator')}</strong> {t('banner.simulatorText')}
        </p>
      )}
      {hub.updatedTo && (
        <p class="banner banner-info" role="status">
          {t('banner.newVersion', { version: hub.updatedTo })}{' '}
          <button type="button" class="link-button" onClick={() => location.reload()}>
            {t('banner.reloadToUpdate')}
          </button>
        </p>
      )}
    </div>
  );
}
