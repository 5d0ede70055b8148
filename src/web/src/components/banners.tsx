/** The strips under the header: simulator, lost connection, a new hub version. */
import { useStore } from '../hooks.js';
import { hubStore } from '../state/hub.js';

export function Banners() {
  const hub = useStore(hubStore);
  const server = hub.mode === 'upstream' ? 'upstream' : 'hub';
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
            Connection to the {server} lost. Reconnecting… The page updates again by itself once it is back.
          </p>
        )}
        {!waiting && hub.connection === 'connecting' && !hub.everConnected && (
          <p class="banner banner-quiet">Connecting to the hub…</p>
        )}
      </div>
      {hub.radio?.simulated && (
        <p class="banner banner-sim" data-testid="simulator-banner">
          <strong>Simulator</strong> · no radio attached: the nodes and their readings are simulated.
        </p>
      )}
      {hub.updatedTo && (
        <p class="banner banner-info" role="status">
          The hub now runs version {hub.updatedTo}.{' '}
          <button type="button" class="link-button" onClick={() => location.reload()}>
            Reload to update
          </button>
        </p>
      )}
    </div>
  );
}
