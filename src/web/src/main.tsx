import { render } from 'preact';
import { App } from './app.js';
import { followLanguage } from './i18n/index.js';
import { startHubLive } from './live/hub-live.js';
import { registerServiceWorker } from './notifications/push.js';
import { initChat } from './state/chat.js';
import { followTheme } from './state/display.js';
import { initSession } from './state/session.js';
import './styles/base.css';

followTheme();
followLanguage();
initSession();
initChat();
startHubLive();
render(<App />, document.getElementById('app')!);
// The service worker shows push notifications and makes the app installable (public/sw.js).
registerServiceWorker()?.catch(() => undefined);
