/**
 * The auth button (spec "Authentication" 6): "Auth: OFF" when AUTH_ENABLED is false, "Auth:
 * misconfigured" when it is on but incomplete, the signed-in user (with Sign out) when on, or
 * "Sign in".
 */
import { useState } from 'preact/hooks';
import { useStore } from '../hooks.js';
import { auditAuthStore, beginSignIn, SignInError, signOutOfAudit } from './audit-session.js';

export function AuthButton() {
  const { config, session } = useStore(auditAuthStore);
  const [error, setError] = useState<string>();
  if (!config) return null;
  if (config.status === 'off')
    return (
      <span
        class="auth-button auth-off"
        data-testid="auth-button"
        title="AUTH_ENABLED is off: the audit API answers without sign-in, on this network."
      >
        Auth: OFF
      </span>
    );
  if (config.status === 'misconfigured')
    return (
      <span
        class="auth-button auth-bad"
        data-testid="auth-button"
        title={`AUTH_ENABLED is on, but ${config.missing?.length ? `${config.missing.join(', ')} ${config.missing.length > 1 ? 'are' : 'is'} missing` : 'the identity provider is not set up'}. The audit API refuses every request until it is fixed.`}
      >
        Auth: misconfigured
      </span>
    );
  if (session)
    return (
      <span class="auth-user" data-testid="auth-button">
        <span
          class="auth-name"
          title={session.roles.length ? `Roles: ${session.roles.join(', ')}` : 'No roles'}
        >
          <span class="visually-hidden">Signed in as </span>
          {session.name}
        </span>
        <button type="button" class="link-button" onClick={() => signOutOfAudit('You signed out.')}>
          Sign out
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
        Sign in
      </button>
      {error && (
        <span class="form-error" role="alert">
          {error}
        </span>
      )}
    </span>
  );
}
