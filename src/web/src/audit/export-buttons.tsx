/**
 * Export (issue 15 "Export"): CSV or JSON of the current filter from `/api/events/export`, which
 * streams every match. The answer is read as it streams and saved under a name that says the
 * filter and the time window (`audit-events_exchange_result-failure_…_to_….csv`): the hub's own
 * Content-Disposition name cannot know what the person searched for, and a link could not carry
 * the bearer token.
 */
import { useState } from 'preact/hooks';
import { t } from '../i18n/index.js';
import { ApiError, apiErrorFrom, retryAfterSeconds } from '../lib/problem.js';
import { auditWords } from './audit-api.js';
import { type AuditSearch, apiFilters, exportFileName, filterParams } from './audit-filters.js';
import { auditToken, expired, SignInRedirect } from './audit-session.js';

const FORMATS = ['csv', 'json'] as const;

export function ExportButtons({ search }: { search: AuditSearch }) {
  const [busy, setBusy] = useState<(typeof FORMATS)[number]>();
  const [error, setError] = useState<string>();
  const run = async (format: (typeof FORMATS)[number]) => {
    setBusy(format);
    setError(undefined);
    const now = Date.now();
    const filters = apiFilters(search, now);
    const params = filterParams(filters);
    params.set('format', format);
    try {
      const blob = await download(`/api/events/export?${params}`);
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = exportFileName(filters, now, format);
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (e) {
      setError(auditWords(e));
    } finally {
      setBusy(undefined);
    }
  };
  return (
    <span class="audit-export">
      {FORMATS.map((format) => (
        <button
          key={format}
          type="button"
          class="button button-secondary button-small"
          disabled={!!busy}
          onClick={() => void run(format)}
        >
          {busy === format ? t('audit.exporting') : t('audit.export', { format: format.toUpperCase() })}
        </button>
      ))}
      {error && (
        <span class="form-error" role="alert">
          {t('audit.exportFailed', { error })}
        </span>
      )}
    </span>
  );
}

/** The export's body as a Blob; a refusal (429 with Retry-After, 403…) becomes an ApiError. */
async function download(path: string): Promise<Blob> {
  const token = auditToken();
  let res: Response;
  try {
    res = await fetch(path, {
      headers: {
        accept: 'text/csv, application/json',
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      cache: 'no-store',
    });
  } catch {
    throw new ApiError(0, 'the hub cannot be reached');
  }
  if (!res.ok) {
    if (res.status === 401 && token) {
      expired();
      throw new SignInRedirect('the token was refused');
    }
    const body: unknown = await res.json().catch(() => undefined);
    throw apiErrorFrom(res.status, body, retryAfterSeconds(res.headers.get('retry-after'), Date.now()));
  }
  return res.blob();
}
