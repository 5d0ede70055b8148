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
import './audit.css';
import { FormAlert } from '../components/form-alert.js';

const TITLES: Record<AuditView, string> = {
  search: 'Audit events',
  sources: 'Audit sources',
  ask: 'Ask about audit events',
  alerts: 'Audit alerts',
  rules: 'Alert rules',
  callback: 'Signing in',
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
        <h1>The audit console could not start</h1>
        <p>{auditWords(auth.configError)}</p>
      </section>
    ) : (
      <p class="loading" role="status">
        Loading…
      </p>
    );
  }
  const ai = features.features?.ai_features_enabled === true;
  const alerts = !!features.features && 'alerts_enabled' in features.features;
  const tabs: Array<{ view: AuditView; label: string; href: string }> = [
    { view: 'search', label: 'Events', href: '/audit' },
    { view: 'sources', label: 'Sources', href: '/audit/sources' },
    ...(ai ? [{ view: 'ask' as const, label: 'Ask', href: '/audit/ask' }] : []),
    ...(alerts
      ? [
          { view: 'alerts' as const, label: 'Alerts', href: '/audit/alerts' },
          { view: 'rules' as const, label: 'Rules', href: '/audit/rules' },
        ]
      : []),
  ];
  return (
    <div class="audit">
      <div class="audit-bar">
        <nav aria-label="Audit console" class="audit-tabs">
          {tabs.map((t) => (
            <Link
              key={t.view}
              href={t.href}
              class="audit-tab"
              aria-current={view === t.view ? 'page' : undefined}
            >
              {t.label}
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
          Loading…
        </p>
      ) : features.error && !features.features ? (
        <section class="panel notice notice-error" role="alert">
          {/* Issue 23: a caller without a reader role is told so, not that the API failed. */}
          <h1>{refusedAccess(features.error) ? 'Not allowed' : 'The audit API did not answer'}</h1>
          <p>{auditWords(features.error)}</p>
        </section>
      ) : view === 'search' ? (
        <SearchView search={search} />
      ) : view === 'sources' ? (
        <SourceHealthView />
      ) : view === 'ask' ? (
        features.features ? (
          ai ? (
            <AskView search={search} />
          ) : (
            <section class="panel notice">
              <h1>Asking is switched off</h1>
              <p>AI features are off on this hub (AI_FEATURES_ENABLED).</p>
            </section>
          )
        ) : (
          <p class="loading" role="status">
            Loading…
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
      <h1 id="audit-sign-in-title">Sign in to the audit console</h1>
      {notice && (
        <p class="notice-info" role="status">
          {notice}
        </p>
      )}
      <p>
        Audit events are only for signed-in administrators. You sign in with your organisation’s account
        {config?.issuer ? ` at ${hostOf(config.issuer)}` : ''}.
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
        Sign in
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
          if (!cancelled)
            setError(
              e instanceof SignInError ? e.message : 'The sign-in could not be finished. Start it again.',
            );
        },
      );
    return () => {
      cancelled = true;
    };
  }, [search]);
  if (!error)
    return (
      <p class="loading" role="status">
        Signing in…
      </p>
    );
  return (
    <section class="panel notice notice-error" role="alert">
      <h1>The sign-in did not finish</h1>
      <p>{error}</p>
      <p>
        <Link href="/audit">Back to the audit console</Link>
      </p>
    </section>
  );
}

/** A 403 from the hub's role check (not another failure). */
function refusedAccess(error: unknown): boolean {
  return error instanceof ApiError && error.status === 403 && accessWords(error) !== undefined;
}
