/** What a page shows while its data loads, or when loading it failed. */
import type { ComponentChildren } from 'preact';
import { t } from '../i18n/index.js';
import { plainWords } from '../lib/problem.js';

/** The load failed: why, in plain words, and "Try again" (`small`: the small button). */
export function LoadError({
  error,
  onRetry,
  small,
  words = plainWords,
}: {
  error: unknown;
  onRetry: () => void;
  small?: boolean;
  /** The error in words (default plainWords; the billing pages give the hub's own reason). */
  words?: (error: unknown) => string;
}) {
  return (
    <div class="notice notice-error" role="alert">
      <p>{words(error)}</p>
      <button type="button" class={small ? 'button button-small' : 'button'} onClick={onRetry}>
        {t('common.tryAgain')}
      </button>
    </div>
  );
}

/** The load is under way (announced as a status). */
export function Loading({ children }: { children: ComponentChildren }) {
  return (
    <p class="loading" role="status">
      {children}
    </p>
  );
}
