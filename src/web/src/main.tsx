import { render } from 'preact';
import { App } from './app.js';
import { startHubLive } from './live/hub-live.js';
import { registerServiceWorker } from './notifications/push.js';
import { initChat } from './state/chat.js';
import { followTheme } from './state/display.js';
import { initSession } from './state/session.js';
import './styles/base.css';

followTheme();
initSession();
initChat();
startHubLive();
render(<App />, document.getElementById('app')!);
// The service worker shows push notifications and makes the app installable (public/sw.js).
registerServiceWorker()?.catch(() => undefined);
