/**
 * The audit console (issue 15), loaded only when the hub runs the audit plugin and someone opens
 * /audit: the search (with the event drawer, bulk tags and export), source health, the ask panel
 * (only with AI features on), alerts and rules; the auth button; and /audit/callback, where a
 * sign-in comes back from the identity provider.
 */
import { useEffect, useState } from 'preact/hooks';
import { useStore, useTitle } from '../hooks.js';
import { ApiError } from '../lib/problem.js';
import type { AuditView } from '../lib/routes.js';
import { Link, navigate } from '../router.js';
import { accessWords } from './access-words.js';
import { AlertsView, RulesView } from './alerts-view.js';
import { AskView } from './ask-panel.js';
import { auditWords } from './audit-api.js';
import { auditFeaturesStore, loadFeatures } from './audit-features.js';
import { auditAuthStore, beginSignIn, completeSignIn, loadAuthConfig, SignInError } from './audit-session.js';
import { AuthButton } from './auth-button.js';
import { SearchView } from './search-view.js';
import { SourceHealthView } from './source-health.js';
import { TimelineView } from './timeline-view.js';
import './audit.css';
import { FormAlert } from '../components/form-alert.js';
import { t } from '../i18n/index.js';

const TITLES: Record<AuditView, string> = {
  search: 'Audit events',
  sources: 'Audit sources',
  ask: 'Ask about audit events',
  alerts: 'Audit alerts',
  rules: 'Alert rules',
  callback: 'Signing in',
  timeline: 'Actor timeline',
};

export function AuditConsole({ view, search }: { view: AuditView; search: string }) {
  useTitle(TITLES[view]);
  const auth = useStore(auditAuthStore);
  const features = useStore(auditFeaturesStore);
  useEffect(() => {
    void loadAuthConfig();
  }, []);
  const signedOut = auth.config?.status === 'on' && !auth.session;
  useEffect(() => {
    if (auth.config && !signedOut && view !== 'callback') void loadFeatures();
  }, [auth.config, signedOut, view]);

  if (view === 'callback') return <SignInCallback search={search} />;
  if (!auth.config) {
    return auth.configError ? (
      <section class="panel notice notice-error" role="alert">
        <h1>{t('audit.couldNotStart')}</h1>
        <p>{auditWords(auth.configError)}</p>
      </section>
    ) : (
      <p class="loading" role="status">
        {t('common.loading')}
      </p>
    );
  }
  const ai = features.features?.ai_features_enabled === true;
  const alerts = !!features.features && 'alerts_enabled' in features.features;
  const tabs: Array<{ view: AuditView; label: string; href: string }> = [
    { view: 'search', label: t('audit.events'), href: '/audit' },
    { view: 'sources', label: t('audit.sources'), href: '/audit/sources' },
    ...(ai ? [{ view: 'ask' as const, label: t('audit.ask'), href: '/audit/ask' }] : []),
    ...(alerts
      ? [
          { view: 'alerts' as const, label: t('header.alerts'), href: '/audit/alerts' },
          { view: 'rules' as const, label: t('mesh.alerts.rules'), href: '/audit/rules' },
        ]
      : []),
  ];
  return (
    <div class="audit">
      <div class="audit-bar">
        <nav aria-label={t('audit.console')} class="audit-tabs">
          {tabs.map((tab) => (
            <Link
              key={tab.view}
              href={tab.href}
              class="audit-tab"
              aria-current={view === tab.view ? 'page' : undefined}
            >
              {tab.label}
            </Link>
          ))}
        </nav>
        <AuthButton />
      </div>
      {signedOut ? (
        <SignInPanel />
      ) : auth.config.status === 'misconfigured' && !features.features && !features.error ? (
        // Every audit route answers 503 here: one call says so, not one per view.
        <p class="loading" role="status">
          {t('common.loading')}
        </p>
      ) : features.error && !features.features ? (
        <section class="panel notice notice-error" role="alert">
          {/* Issue 23: a caller without a reader role is told so, not that the API failed. */}
          <h1>{refusedAccess(features.error) ? t('audit.notAllowed') : t('audit.apiNoAnswer')}</h1>
          <p>{auditWords(features.error)}</p>
        </section>
      ) : view === 'search' ? (
        <SearchView search={search} />
      ) : view === 'timeline' ? (
        <TimelineView search={search} />
      ) : view === 'sources' ? (
        <SourceHealthView />
      ) : view === 'ask' ? (
        features.features ? (
          ai ? (
            <AskView search={search} />
          ) : (
            <section class="panel notice">
              <h1>{t('audit.askOff')}</h1>
              <p>{t('audit.askOffText')}</p>
            </section>
          )
        ) : (
          <p class="loading" role="status">
            {t('common.loading')}
          </p>
        )
      ) : view === 'alerts' ? (
        <AlertsView />
      ) : (
        <RulesView />
      )}
    </div>
  );
}

function SignInPanel() {
  const { notice, config } = useStore(auditAuthStore);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  return (
    <section class="panel audit-sign-in" aria-labelledby="audit-sign-in-title">
      <h1 id="audit-sign-in-title">{t('audit.signInHeading')}</h1>
      {notice && (
        <p class="notice-info" role="status">
          {notice}
        </p>
      )}
      <p>
        {config?.issuer ? t('audit.signInTextAt', { host: hostOf(config.issuer) }) : t('audit.signInText')}
      </p>
      <button
        type="button"
        class="button"
        disabled={busy}
        onClick={() => {
          setBusy(true);
          setError(undefined);
          beginSignIn().catch((e: unknown) => {
            setBusy(false);
            if (e instanceof SignInError) setError(e.message);
          });
        }}
      >
        {t('chat.signIn')}
      </button>
      <FormAlert message={error} />
    </section>
  );
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

function SignInCallback({ search }: { search: string }) {
  const [error, setError] = useState<string>();
  useEffect(() => {
    let cancelled = false;
    loadAuthConfig()
      .then(() => completeSignIn(search))
      .then(
        (to) => {
          if (!cancelled) navigate(to, { replace: true });
        },
        (e: unknown) => {
          if (!cancelled) setError(e instanceof SignInError ? e.message : t('audit.signInUnfinished'));
        },
      );
    return () => {
      cancelled = true;
    };
  }, [search]);
  if (!error)
    return (
      <p class="loading" role="status">
        {t('chat.signingIn')}
      </p>
    );
  return (
    <section class="panel notice notice-error" role="alert">
      <h1>{t('audit.signInDidNotFinish')}</h1>
      <p>{error}</p>
      <p>
        <Link href="/audit">{t('audit.backToConsole')}</Link>
      </p>
    </section>
  );
}

/** A 403 from the hub's role check (not another failure). */
function refusedAccess(error: unknown): boolean {
  return error instanceof ApiError && error.status === 403 && accessWords(error) !== undefined;
}
