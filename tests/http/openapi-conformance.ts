/**
 * Checks a real answer against the OpenAPI document that describes it: the status is one the
 * operation lists, the media type one that status lists, the body valid against its schema
 * (ajv), and every paging, location and retry header the answer carries is documented.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { expect } from 'vitest';
import type { HttpMethod, OpenApiDocument } from '../../src/http/openapi.js';

const pointer = (parts: string[]) =>
  parts.map((p) => `/${encodeURIComponent(p.replace(/~/g, '~0').replace(/\//g, '~1'))}`).join('');

const CHECKED_HEADERS = ['link', 'location', 'retry-after', 'www-authenticate'];

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

export class Conformance {
  private readonly ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
  private readonly validators = new Map<string, ValidateFunction>();
  /** `METHOD path` of every operation an answer was checked against. */
  readonly covered = new Set<string>();

  constructor(private readonly doc: OpenApiDocument) {
    this.ajv.addSchema(doc as object, 'doc');
  }

  /** The body's schema of one response, as a validator. */
  validator(path: string, method: HttpMethod, status: number, type: string): ValidateFunction {
    const ref = `doc#${pointer(['paths', path, method, 'responses', String(status), 'content', type, 'schema'])}`;
    let validate = this.validators.get(ref);
    if (!validate) {
      validate = this.ajv.compile({ $ref: ref });
      this.validators.set(ref, validate);
    }
    return validate;
  }

  /** Validates `value` against a named component (e.g. an event's data). */
  component(name: string, value: unknown): void {
    const validate = this.ajv.compile({ $ref: `doc#/components/schemas/${name}` });
    expect(validate(value), JSON.stringify(validate.errors)).toBe(true);
  }

  check(method: HttpMethod, path: string, answer: Answer): void {
    const operation = this.doc.paths[path]?.[method];
    expect(operation, `${method.toUpperCase()} ${path} is documented`).toBeDefined();
    this.covered.add(`${method.toUpperCase()} ${path}`);
    const where = `${method.toUpperCase()} ${path} → ${answer.status}`;
    const response = operation!.responses[String(answer.status)];
    expect(response, `${where}: the status is documented (${answer.text.slice(0, 300)})`).toBeDefined();
    for (const header of CHECKED_HEADERS) {
      if (!answer.headers.has(header)) continue;
      const documented = Object.keys(response!.headers ?? {}).map((h) => h.toLowerCase());
      expect(documented, `${where}: the ${header} header is documented`).toContain(header);
    }
    const type = (answer.headers.get('content-type') ?? '').split(';')[0]!.trim();
    if (!response!.content) {
      expect(answer.text, `${where}: no body is documented`).toBe('');
      return;
    }
    expect(Object.keys(response!.content), `${where}: the media type is documented`).toContain(type);
    if (!response!.content[type]?.schema) return;
    const validate = this.validator(path, method, answer.status, type);
    const body = JSON.parse(answer.text) as unknown;
    expect(validate(body), `${where}: ${JSON.stringify(validate.errors)}\n${answer.text.slice(0, 500)}`).toBe(
      true,
    );
  }
}

/** Every operation of the document as `METHOD path`. */
export function operationsOf(doc: OpenApiDocument): string[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
  );
}
