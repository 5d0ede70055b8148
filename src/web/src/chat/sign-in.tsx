/** Sign-in for chat: a token from POST /api/v1/auth/token, kept for this browser tab. */
import { useState } from 'preact/hooks';
import { ApiError, plainWords } from '../lib/problem.js';
import { signIn } from '../state/session.js';
import './sign-in.css';
import { t } from '../i18n/index.js';

function signInProblem(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status === 401) return t('chat.wrongPassword');
    if (error.status === 429) {
      const wait = error.extras.retryAfterSeconds;
      return wait === undefined ? t('chat.tooManySignIns') : t('chat.tooManySignInsWait', { count: wait });
    }
  }
  return plainWords(error);
}

export function SignIn({
  notice,
  heading = t('chat.signInHeading'),
  intro = t('chat.signInIntro'),
}: {
  notice?: string | undefined;
  heading?: string;
  intro?: string;
}) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();

  const submit = async (event: Event) => {
    event.preventDefault();
    if (!username.trim() || !password) {
      setError(t('chat.enterBoth'));
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      await signIn(username.trim(), password);
    } catch (caught) {
      setError(signInProblem(caught));
      setBusy(false);
    }
  };

  return (
    <form class="panel sign-in" onSubmit={submit} aria-labelledby="sign-in-heading" noValidate>
      <h1 id="sign-in-heading">{heading}</h1>
      <p class="muted">{intro}</p>
      {notice && (
        <p class="notice notice-info" role="status" data-testid="sign-in-notice">
          {notice}
        </p>
      )}
      <label for="sign-in-username">{t('chat.username')}</label>
      <input
        id="sign-in-username"
        name="username"
        autocomplete="username"
        autocapitalize="none"
        spellcheck={false}
        value={username}
        onInput={(e) => setUsername((e.target as HTMLInputElement).value)}
      />
      <label for="sign-in-password">{t('chat.password')}</label>
      <input
        id="sign-in-password"
        name="password"
        type="password"
        autocomplete="current-password"
        value={password}
        onInput={(e) => setPassword((e.target as HTMLInputElement).value)}
      />
      {error && (
        <p class="form-error" role="alert" data-testid="sign-in-error">
          {error}
        </p>
      )}
      <button type="submit" class="button" disabled={busy}>
        {busy ? t('chat.signingIn') : t('chat.signIn')}
      </button>
    </form>
  );
}
