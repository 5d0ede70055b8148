import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { SignIn } from './chat/sign-in.js';
import { Banners } from './components/banners.js';
import { ErrorBoundary } from './components/error-boundary.js';
import { Header } from './components/header.js';
import { LazyView } from './components/lazy-view.js';
import { Dashboard } from './dashboard/dashboard.js';
import { useStore, useTitle } from './hooks.js';
import { languageStore, t } from './i18n/index.js';
import { matchRoute } from './lib/routes.js';
import { Link, locationStore } from './router.js';
import { hubStore } from './state/hub.js';
import { sessionStore } from './state/session.js';

const loadNodePage = () => import('./node-page/node-page.js').then((m) => m.NodePage);
const loadChatPage = () => import('./chat/chat-page.js').then((m) => m.ChatPage);
const loadPlansPage = () => import('./billing/plans-page.js').then((m) => m.PlansPage);
const loadAdminBillingPage = () => import('./billing/admin-billing-page.js').then((m) => m.AdminBillingPage);
const loadSitesPage = () => import('./sites/sites-page.js').then((m) => m.SitesPage);
const loadPacketsPage = () => import('./packets/packets-page.js').then((m) => m.PacketsPage);
const loadNotificationsPage = () =>
  import('./notifications/notifications-page.js').then((m) => m.NotificationsPage);
const loadAuditConsole = () => import('./audit/audit-console.js').then((m) => m.AuditConsole);

function NotFound({ path }: { path: string }) {
  useTitle(t('common.notFoundTitle'));
  return (
    <section class="panel notice">
      <h1>{t('common.notFoundHeading')}</h1>
      <p>
        {t('common.notFoundBefore')} <code>{path}</code>. <Link href="/">{t('common.goToMap')}</Link>.
      </p>
    </section>
  );
}

export function App() {
  const location = useStore(locationStore);
  const route = matchRoute(location.pathname, location.search);
  const { plugins, mode, signInToRead } = useStore(hubStore);
  const { notice } = useStore(sessionStore);
  // Every view re-renders in the new language when the header's picker changes it.
  useStore(languageStore);
  // Unknown until the live stream's hello; the billing pages wait for it rather than guess.
  const billingOn = plugins?.includes('billing');
  const main = useRef<HTMLElement>(null);
  const first = useRef(true);

  useEffect(() => {
    // After a client-side navigation, move focus to the new page, as a full page load would.
    if (first.current) {
      first.current = false;
      return;
    }
    main.current?.focus({ preventScroll: true });
    if (main.current) main.current.scrollTop = 0;
  }, [location.pathname]);

  let view: ComponentChildren;
  // An upstream whose reads need a sign-in: the map, node and sites pages ask for one first.
  if (signInToRead && (route.page === 'dashboard' || route.page === 'node' || route.page === 'sites'))
    view = <SignIn notice={notice} heading={t('chat.signInMeshHeading')} intro={t('chat.signInMeshIntro')} />;
  else if (route.page === 'dashboard') view = <Dashboard focus={route.focus} site={route.site} />;
  else if (route.page === 'node')
    view = <LazyView load={loadNodePage} props={{ nodeId: route.nodeId, search: location.search }} />;
  else if (route.page === 'chat') view = <LazyView load={loadChatPage} props={{ nodeId: route.nodeId }} />;
  else if (route.page === 'plans' || route.page === 'admin-billing') {
    view =
      billingOn === undefined ? (
        <p class="loading" role="status">
          {t('common.loading')}
        </p>
      ) : route.page === 'plans' ? (
        <LazyView load={loadPlansPage} props={{ billingOn }} />
      ) : (
        <LazyView load={loadAdminBillingPage} props={{ billingOn }} />
      );
  } else if (route.page === 'sites') {
    // Unknown until the live stream's hello says which role serves the page.
    view =
      mode === undefined ? (
        <p class="loading" role="status">
          {t('common.loading')}
        </p>
      ) : (
        <LazyView load={loadSitesPage} props={{ upstream: mode === 'upstream' }} />
      );
  } else if (route.page === 'packets') {
    view = <LazyView load={loadPacketsPage} props={{}} />;
  } else if (route.page === 'notifications') {
    view = <LazyView load={loadNotificationsPage} props={{}} />;
  } else if (route.page === 'audit') {
    // Shown only when the hub runs the audit plugin (from the live stream's hello, as billing).
    const auditOn = plugins?.includes('audit');
    view =
      auditOn === undefined ? (
        <p class="loading" role="status">
          {t('common.loading')}
        </p>
      ) : auditOn ? (
        <LazyView load={loadAuditConsole} props={{ view: route.view, search: location.search }} />
      ) : (
        <NotFound path={location.pathname} />
      );
  } else view = <NotFound path={route.path} />;

  return (
    <>
      <a class="skip-link" href="#main">
        {t('common.skipToContent')}
      </a>
      <Header page={route.page} />
      <Banners />
      <main id="main" ref={main} tabIndex={-1} class={`page page-${route.page}`}>
        <ErrorBoundary resetKey={location.pathname}>{view}</ErrorBoundary>
      </main>
    </>
  );
}
