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

/** What each input of the form says to the browser beyond its name (autofill, no autocorrect). */
const INPUT_ATTRIBUTES = {
  username: { autocomplete: 'username', autocapitalize: 'none', spellcheck: false },
  password: { type: 'password', autocomplete: 'current-password' },
} as const;

/** A labelled input of the form, `sign-in-<name>` by id. */
function SignInInput({
  name,
  label,
  value,
  onValue,
}: {
  name: keyof typeof INPUT_ATTRIBUTES;
  label: string;
  value: string;
  onValue: (value: string) => void;
}) {
  const id = `sign-in-${name}`;
  return (
    <>
      <label for={id}>{label}</label>
      <input
        id={id}
        name={name}
        {...INPUT_ATTRIBUTES[name]}
        value={value}
        onInput={(e) => onValue((e.target as HTMLInputElement).value)}
      />
    </>
  );
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
      <SignInInput name="username" label={t('chat.username')} value={username} onValue={setUsername} />
      <SignInInput name="password" label={t('chat.password')} value={password} onValue={setPassword} />
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
