/**
 * RFC 9457 problem details (docs/architecture.md "Decisions": errors): `application/problem+json` with `type`,
 * `title`, `status`, `detail`, `request_id`, and `errors` naming each invalid field.
 * Throw a `ProblemError` anywhere in a route; the app's one `onError` turns it into the body.
 */
import type { z } from 'zod';

export interface FieldError {
  /** The field, as the client named it: `node_id`, `start`, `body.text`. */
  field: string;
  message: string;
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail?: string;
  request_id?: string;
  errors?: FieldError[];
  [extension: string]: unknown;
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  421: 'Misdirected Request',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
  507: 'Insufficient Storage',
};

export class ProblemError extends Error {
  override readonly name = 'ProblemError';
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly extras: {
      errors?: FieldError[];
      type?: string;
      headers?: Record<string, string>;
      [k: string]: unknown;
    } = {},
  ) {
    super(detail);
  }

  toBody(requestId?: string): ProblemBody {
    const { errors, type, headers: _headers, ...extensions } = this.extras;
    return {
      type: type ?? 'about:blank',
      title: TITLES[this.status] ?? 'Error',
      status: this.status,
      detail: this.detail,
      ...(requestId ? { request_id: requestId } : {}),
      ...(errors?.length ? { errors } : {}),
      ...extensions,
    };
  }
}

/** A 400 naming one invalid field and what is wrong with it. */
export function fieldProblem(field: string, message: string): ProblemError {
  return new ProblemError(400, `invalid ${field}`, { errors: [{ field, message }] });
}

/** A 400 listing every field a zod schema rejected. */
export function validationProblem(error: z.ZodError, prefix = ''): ProblemError {
  const errors = error.issues.map((issue) => ({
    field: prefix + (issue.path.map(String).join('.') || '(body)'),
    message: issue.message,
  }));
  const fields = [...new Set(errors.map((e) => e.field))].join(', ');
  return new ProblemError(400, `invalid ${fields}`, { errors });
}

export function problemTitle(status: number): string {
  return TITLES[status] ?? 'Error';
}
