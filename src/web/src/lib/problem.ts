/**
 * API errors (RFC 9457 problem details, as every hub route answers them) in plain words for
 * the person in front of the screen. The hub's `detail` is already written for people; this
 * adds what to do about it, and covers the cases with no body at all (no connection).
 */
import { t } from '../i18n/index.js';

export interface FieldError {
  field: string;
  message: string;
}

export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    /** 0: no answer at all (offline, hub down). */
    readonly status: number,
    readonly detail: string,
    readonly extras: {
      /** The problem's `type` URI, when not `about:blank`. */
      type?: string;
      title?: string;
      errors?: FieldError[];
      retryAfterSeconds?: number;
      /** The token check's reason on a 401 (`expired`, …). */
      reason?: string;
      requestId?: string;
      /** Every member beyond type, title, status, detail and errors (RFC 9457 §3.2), e.g. `lapsed_at`. */
      members?: Record<string, unknown>;
    } = {},
  ) {
    super(detail);
  }

  get fieldErrors(): FieldError[] {
    return this.extras.errors ?? [];
  }
}

/** Retry-After as seconds (RFC 9110 §10.2.3: delay-seconds or an HTTP date). */
export function retryAfterSeconds(header: string | null | undefined, nowMs: number): number | undefined {
  if (!header) return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  return Number.isFinite(at) ? Math.max(0, Math.ceil((at - nowMs) / 1000)) : undefined;
}

/** Builds the error from a failed response's status, headers and (maybe) problem body. */
export function apiErrorFrom(status: number, body: unknown, retryAfter: number | undefined): ApiError {
  const problem = body && typeof body === 'object' ? (body as Record<string, unknown>) : {};
  const errors = Array.isArray(problem.errors)
    ? problem.errors
        .filter((e): e is FieldError => !!e && typeof e.field === 'string' && typeof e.message === 'string')
        .slice(0, 20)
    : undefined;
  const detail = typeof problem.detail === 'string' && problem.detail ? problem.detail : statusText(status);
  const { type: _t, title: _ti, status: _s, detail: _d, errors: _e, ...members } = problem;
  return new ApiError(status, detail, {
    ...(typeof problem.type === 'string' && problem.type !== 'about:blank' ? { type: problem.type } : {}),
    ...(typeof problem.title === 'string' ? { title: problem.title } : {}),
    ...(errors?.length ? { errors } : {}),
    ...(retryAfter !== undefined ? { retryAfterSeconds: retryAfter } : {}),
    ...(typeof problem.reason === 'string' ? { reason: problem.reason } : {}),
    ...(typeof problem.request_id === 'string' ? { requestId: problem.request_id } : {}),
    ...(Object.keys(members).length ? { members } : {}),
  });
}

function statusText(status: number): string {
  if (status === 404) return t('problem.notFound');
  if (status >= 500) return t('problem.serverFailed');
  return t('problem.requestFailed', { status });
}

const capitalise = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** One or two sentences a person can act on. */
export function plainWords(error: unknown): string {
  if (!(error instanceof ApiError)) {
    return t('problem.pageBroke');
  }
  const { status } = error;
  if (status === 0) return t('problem.unreachable');
  if (status === 400 || status === 422) {
    const fields = error.fieldErrors.map((e) => `${e.field} ${e.message}`);
    return fields.length ? `${capitalise(fields.join('; '))}.` : `${capitalise(error.detail)}.`;
  }
  if (status === 401) return t('problem.signInAgain');
  if (status === 403) return t('problem.notAllowed', { detail: error.detail });
  if (status === 404) return `${capitalise(error.detail)}.`;
  if (status === 429) {
    const wait = error.extras.retryAfterSeconds;
    return wait === undefined ? t('problem.tooMany') : t('problem.tooManyWait', { seconds: wait });
  }
  if (status === 503) return t('problem.busy');
  if (status >= 500) {
    const ref = error.extras.requestId;
    return ref ? t('problem.serverProblemRef', { ref }) : t('problem.serverProblem');
  }
  return `${capitalise(error.detail)}.`;
}
