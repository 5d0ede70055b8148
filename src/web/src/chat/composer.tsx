/**
 * Writing a message: live counts of characters and bytes against the hub's limits, the reason
 * when it cannot be sent, and the hub's refusals in plain words (not in your subscription;
 * sending too fast, with a countdown). A text that could not be sent stays in the box.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { LapsedNotice } from '../billing/lapsed-notice.js';
import { isLapsedRefusal } from '../billing/subscription-words.js';
import { t } from '../i18n/index.js';
import { ApiError, plainWords } from '../lib/problem.js';
import { randomId } from '../lib/random-id.js';
import { checkMessageText, MAX_TEXT_BYTES, MAX_TEXT_CHARACTERS } from '../lib/text-limits.js';
import { sendMessage } from '../state/chat.js';

/** A refused send in plain words (the composer's, and a failed text's Send again). */
export function refusal(error: unknown, name: string, nodeId: string): string {
  if (!(error instanceof ApiError)) return plainWords(error);
  switch (error.status) {
    case 0:
      return t('chat.notSentOffline');
    case 403:
      return t('chat.notSubscribed', { name });
    case 404:
      return t('chat.unknownNode', { id: nodeId });
    case 400:
    case 422:
      return t('chat.notSentBecause', {
        reason: error.fieldErrors.map((e) => `${e.field} ${e.message}`).join('; ') || error.detail,
      });
    default:
      return t('chat.notSent', { reason: plainWords(error) });
  }
}

export function Composer({ nodeId, name }: { nodeId: string; name: string }) {
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  /** The refusal because the subscription lapsed (shown with a way to renew). */
  const [lapsed, setLapsed] = useState<ApiError>();
  const [waitUntil, setWaitUntil] = useState(0);
  const [now, setNow] = useState(Date.now());
  // One key per draft: a retry of the same text after a lost answer is the same message to the hub.
  const draft = useRef<{ text: string; key: string }>({ text: '', key: randomId() });
  const check = checkMessageText(text);
  const wait = Math.max(0, Math.ceil((waitUntil - now) / 1000));

  useEffect(() => {
    if (waitUntil <= Date.now()) return;
    const timer = setInterval(() => {
      setNow(Date.now());
      if (Date.now() >= waitUntil) clearInterval(timer);
    }, 1000);
    return () => clearInterval(timer);
  }, [waitUntil]);

  const submit = async (event?: Event) => {
    event?.preventDefault();
    if (!check.ok || busy || wait > 0) return;
    setBusy(true);
    setError(undefined);
    setLapsed(undefined);
    try {
      if (draft.current.text !== text) draft.current = { text, key: randomId() };
      await sendMessage(nodeId, text, draft.current.key);
      draft.current = { text: '', key: randomId() };
      setText('');
    } catch (caught) {
      if (caught instanceof ApiError && caught.status === 429) {
        const seconds = caught.extras.retryAfterSeconds ?? 60;
        setWaitUntil(Date.now() + seconds * 1000);
        setNow(Date.now());
      } else if (caught instanceof ApiError && isLapsedRefusal(caught)) {
        setLapsed(caught);
      } else {
        setError(refusal(caught, name, nodeId));
      }
    } finally {
      setBusy(false);
    }
  };

  const over = check.characters > MAX_TEXT_CHARACTERS || check.bytes > MAX_TEXT_BYTES;
  return (
    <form class="composer" onSubmit={submit}>
      <label for="composer-text" class="visually-hidden">
        {t('chat.messageTo', { name })}
      </label>
      <textarea
        id="composer-text"
        rows={2}
        value={text}
        placeholder={t('chat.messagePlaceholder', { name })}
        aria-describedby="composer-counter composer-problem"
        aria-invalid={check.problems.length > 0}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
            e.preventDefault();
            void submit();
          }
        }}
      />
      <div class="composer-bar">
        <p
          id="composer-counter"
          class={`counter${over ? ' counter-over' : ''}`}
          data-testid="composer-counter"
        >
          {t('chat.counter', {
            characters: check.characters,
            maxCharacters: MAX_TEXT_CHARACTERS,
            bytes: check.bytes,
            maxBytes: MAX_TEXT_BYTES,
          })}
        </p>
        <button type="submit" class="button" disabled={!check.ok || busy || wait > 0}>
          {busy ? t('chat.sending') : t('chat.send')}
        </button>
      </div>
      <div id="composer-problem" role="alert" class="composer-problem">
        {check.problems.map((p) => (
          <p key={p} class="form-error" data-testid="composer-problem">
            {p}
          </p>
        ))}
        {wait > 0 && (
          <p class="form-error" data-testid="composer-wait">
            {t('chat.tooFast', { seconds: wait })}
          </p>
        )}
        {error && (
          <p class="form-error" data-testid="composer-error">
            {error}
          </p>
        )}
        {lapsed && <LapsedNotice error={lapsed} />}
      </div>
      <p class="muted small composer-hint">{t('chat.hint')}</p>
    </form>
  );
}
