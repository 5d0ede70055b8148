/** Sign-in for chat: a token from POST /api/v1/auth/token, kept for this browser tab. */
import { useState } from 'preact/hooks';
import { ApiError, plainWords } from '../lib/problem.js';
import { signIn } from '../state/session.js';
import './sign-in.css';

function signInProblem(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status === 401) return 'Wrong username or password.';
    if (error.status === 429) {
      const wait = error.extras.retryAfterSeconds;
      return `Too many failed sign-ins. Try again in ${wait ?? 'a few'} seconds.`;
    }
  }
  return plainWords(error);
}

const CHAT_INTRO =
  'Messages travel over the mesh radio to people carrying nodes in the field. You need an account on this hub.';

export function SignIn({
  notice,
  heading = 'Sign in to chat',
  intro = CHAT_INTRO,
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
      setError('Enter your username and password.');
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
      <label for="sign-in-username">Username</label>
      <input
        id="sign-in-username"
        name="username"
        autocomplete="username"
        autocapitalize="none"
        spellcheck={false}
        value={username}
        onInput={(e) => setUsername((e.target as HTMLInputElement).value)}
      />
      <label for="sign-in-password">Password</label>
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
        {busy ? 'Signing in…' : 'Sign in'}
      </button>
    </form>
  );
}
