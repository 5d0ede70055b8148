/**
 * API errors (RFC 9457 problem details, as every hub route answers them) in plain words for
 * the person in front of the screen. The hub's `detail` is already written for people; this
 * adds what to do about it, and covers the cases with no body at all (no connection).
 */

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
  if (status === 404) return 'not found';
  if (status >= 500) return 'the hub could not complete the request';
  return `the request failed (HTTP ${status})`;
}

const capitalise = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** One or two sentences a person can act on. */
export function plainWords(error: unknown): string {
  if (!(error instanceof ApiError)) {
    return 'Something went wrong in the page. Reload it; if it happens again, tell whoever runs this hub.';
  }
  const { status } = error;
  if (status === 0) return "The hub can't be reached. Check your Wi-Fi or network connection.";
  if (status === 400 || status === 422) {
    const fields = error.fieldErrors.map((e) => `${e.field} ${e.message}`);
    return fields.length ? `${capitalise(fields.join('; '))}.` : `${capitalise(error.detail)}.`;
  }
  if (status === 401) return 'Your sign-in is no longer valid. Please sign in again.';
  if (status === 403) return `Not allowed: ${error.detail}.`;
  if (status === 404) return `${capitalise(error.detail)}.`;
  if (status === 429) {
    const wait = error.extras.retryAfterSeconds;
    return wait === undefined
      ? 'Too many requests. Wait a moment and try again.'
      : `Too many requests. Wait ${wait} s and try again.`;
  }
  if (status === 503) return 'The hub is busy or still starting. It should answer again in a moment.';
  if (status >= 500) {
    const ref = error.extras.requestId ? ` (reference ${error.extras.requestId})` : '';
    return `The hub ran into a problem${ref}. Try again; if it keeps happening, check the hub's log.`;
  }
  return `${capitalise(error.detail)}.`;
}
