/**
 * The auth button (spec "Authentication" 6): "Auth: OFF" when AUTH_ENABLED is false, "Auth:
 * misconfigured" when it is on but incomplete, the signed-in user (with Sign out) when on, or
 * "Sign in".
 */
import { useState } from 'preact/hooks';
import { useStore } from '../hooks.js';
import { t } from '../i18n/index.js';
import { auditAuthStore, beginSignIn, SignInError, signOutOfAudit } from './audit-session.js';

export function AuthButton() {
  const { config, session } = useStore(auditAuthStore);
  const [error, setError] = useState<string>();
  if (!config) return null;
  if (config.status === 'off')
    return (
      <span class="auth-button auth-off" data-testid="auth-button" title={t('audit.authOffTitle')}>
        {t('audit.authOff')}
      </span>
    );
  if (config.status === 'misconfigured')
    return (
      <span
        class="auth-button auth-bad"
        data-testid="auth-button"
        title={
          config.missing?.length
            ? t('audit.authMissing', { count: config.missing.length, names: config.missing.join(', ') })
            : t('audit.authNoProvider')
        }
      >
        {t('audit.authMisconfigured')}
      </span>
    );
  if (session)
    return (
      <span class="auth-user" data-testid="auth-button">
        <span
          class="auth-name"
          title={
            session.roles.length ? t('audit.roles', { roles: session.roles.join(', ') }) : t('audit.noRoles')
          }
        >
          <span class="visually-hidden">{t('audit.signedInAs')} </span>
          {session.name}
        </span>
        <button type="button" class="link-button" onClick={() => signOutOfAudit(t('header.signedOut'))}>
          {t('header.signOut')}
        </button>
      </span>
    );
  return (
    <span class="auth-user" data-testid="auth-button">
      <button
        type="button"
        class="button button-small"
        onClick={() =>
          beginSignIn().catch((e: unknown) => {
            if (e instanceof SignInError) setError(e.message);
          })
        }
      >
        {t('chat.signIn')}
      </button>
      {error && (
        <span class="form-error" role="alert">
          {error}
        </span>
      )}
    </span>
  );
}
