/**
 * OpenAPI 3.0.3 documents built from the zod schemas the routes validate with and answer in
 * (docs/architecture.md "Decisions": one place per fact). An API is a list of operations — method, path,
 * parameters, body and responses, each a zod schema — and the builder turns it into the document.
 *
 * Request schemas are converted as the client sends them (zod "input": a query `limit` is a
 * string that becomes a number), response schemas as the server writes them ("output"). Schemas
 * named in `components` are written once under components.schemas and referenced elsewhere.
 */
import { z } from 'zod';
import { problemSchema } from './schemas.js';

export type JsonSchema = Record<string, unknown>;
export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface HeaderSpec {
  description: string;
  schema?: JsonSchema;
}

export interface ResponseSpec {
  description: string;
  /** The body's schema; JSON unless `contentType` says otherwise. */
  body?: z.ZodType;
  /** Media type(s) of the body (default `application/json` when `body` is given). */
  contentType?: string | string[];
  /** Bodies that differ by media type (instead of `body` and `contentType`); undefined: not described. */
  content?: Record<string, z.ZodType | undefined>;
  headers?: Record<string, HeaderSpec>;
}

export interface OperationSpec {
  method: HttpMethod;
  /** OpenAPI form: `/api/v1/messages/{id}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  /** `bearer`: a token is required; `optional-bearer`: required only when the server enables sign-in. */
  security?: 'bearer' | 'optional-bearer';
  params?: { path?: z.ZodObject; query?: z.ZodObject; header?: z.ZodObject };
  body?: { schema: z.ZodType; description?: string; contentTypes?: string[]; required?: boolean };
  responses: Record<number, ResponseSpec>;
}

export interface ApiSpec {
  title: string;
  version: string;
  description: string;
  tags: Array<{ name: string; description: string }>;
  /** Schemas written once under components.schemas and referenced by name. */
  components: Record<string, z.ZodType>;
  operations: OperationSpec[];
}

export interface ParameterObject {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  description?: string;
  schema: JsonSchema;
}

export interface MediaObject {
  schema?: JsonSchema;
}

export interface ResponseObject {
  description: string;
  headers?: Record<string, { description: string; schema: JsonSchema }>;
  content?: Record<string, MediaObject>;
}

export interface OperationObject {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security?: Array<Record<string, string[]>>;
  parameters?: ParameterObject[];
  requestBody?: { description?: string; required: boolean; content: Record<string, MediaObject> };
  responses: Record<string, ResponseObject>;
}

export interface OpenApiDocument {
  openapi: '3.0.3';
  info: { title: string; version: string; description: string };
  tags: Array<{ name: string; description: string }>;
  paths: Record<string, Partial<Record<HttpMethod, OperationObject>>>;
  components: {
    schemas: Record<string, JsonSchema>;
    securitySchemes: Record<string, JsonSchema>;
  };
}

export const PROBLEM_TYPE = 'application/problem+json';

/** An error answer: RFC 9457 problem details. */
export function problem(description: string, headers?: Record<string, HeaderSpec>): ResponseSpec {
  return { description, body: problemSchema, contentType: PROBLEM_TYPE, ...(headers ? { headers } : {}) };
}

/** The problems every API of the hub answers alike, described once. */
export const COMMON_PROBLEMS = {
  badInput: problem('A bad parameter or body; `errors` names each field.'),
  tooLarge: problem('The body is too large.'),
  notJson: problem('The body is not application/json.'),
} as const;

export const HEADERS = {
  link: {
    description: 'RFC 8288 `<…>; rel="next"` while more pages remain: the same query with the next cursor.',
    schema: { type: 'string' },
  },
  location: { description: 'Where the created or accepted resource is.', schema: { type: 'string' } },
  retryAfter: {
    description: 'Seconds to wait before trying again.',
    schema: { type: 'integer', minimum: 0 },
  },
  wwwAuthenticate: {
    description: 'RFC 6750 bearer challenge, with `error="invalid_token"` for a refused token.',
    schema: { type: 'string' },
  },
} satisfies Record<string, HeaderSpec>;

/** The refusals of a bearer-protected route (src/auth/require-auth.ts), described once. */
export const AUTH_PROBLEMS = {
  unauthorized: problem('No bearer token, or a refused one.', {
    'WWW-Authenticate': HEADERS.wwwAuthenticate,
  }),
  noRole: problem('The token does not carry a role this needs.'),
  idpDown: problem('The identity provider’s keys cannot be fetched to check the token.', {
    'Retry-After': HEADERS.retryAfter,
  }),
} as const;

/** The refusals of a JSON body (src/http/problem.ts): spread into an operation's responses. */
export const BODY_PROBLEMS = {
  413: COMMON_PROBLEMS.tooLarge,
  415: COMMON_PROBLEMS.notJson,
} as const;

/** A cursor-paged list's answers: one page of `body` with its `Link` header, or a bad query. */
export function pagedListResponses(body: z.ZodType, description = 'One page.'): Record<number, ResponseSpec> {
  return { 200: { description, body, headers: { Link: HEADERS.link } }, 400: COMMON_PROBLEMS.badInput };
}

const BEARER = 'bearerAuth';

/**
 * A query value declared as a number (a `limit`, see limitParam) drops the pattern of the string
 * it arrives as, and gets back its declared default (zod leaves defaults out of request schemas).
 * z.int()'s safe-integer bounds say nothing a reader needs.
 */
function tidy(json: JsonSchema, meta: Record<string, unknown> | undefined): void {
  if (json.type === 'integer' || json.type === 'number') {
    delete json.pattern;
    if (meta?.default !== undefined && json.default === undefined) json.default = meta.default;
  }
  if (json.minimum === Number.MIN_SAFE_INTEGER) delete json.minimum;
  if (json.maximum === Number.MAX_SAFE_INTEGER) delete json.maximum;
}

class SchemaWriter {
  private readonly names: Map<z.ZodType, string>;

  constructor(components: Record<string, z.ZodType>) {
    this.names = new Map(Object.entries(components).map(([name, schema]) => [schema, name]));
  }

  write(schema: z.ZodType, io: 'input' | 'output', root = true): JsonSchema {
    if (!root && io === 'output') {
      const name = this.names.get(schema);
      if (name) return { $ref: `#/components/schemas/${name}` };
    }
    const json = z.toJSONSchema(schema, {
      target: 'openapi-3.0',
      io,
      reused: 'inline',
      unrepresentable: 'any',
      override: ({ zodSchema, jsonSchema, path }) => {
        const name =
          io === 'output' && path.length > 0 ? this.names.get(zodSchema as unknown as z.ZodType) : undefined;
        if (name) {
          for (const key of Object.keys(jsonSchema)) delete (jsonSchema as JsonSchema)[key];
          jsonSchema.$ref = `#/components/schemas/${name}`;
        }
        tidy(jsonSchema as JsonSchema, z.globalRegistry.get(zodSchema as unknown as z.ZodType));
      },
    }) as JsonSchema;
    delete json.$schema;
    return json;
  }

  components(): Record<string, JsonSchema> {
    const out: Record<string, JsonSchema> = {};
    for (const [schema, name] of this.names) out[name] = this.write(schema, 'output', true);
    return out;
  }
}

function parameters(writer: SchemaWriter, op: OperationSpec): ParameterObject[] {
  const out: ParameterObject[] = [];
  for (const where of ['path', 'query', 'header'] as const) {
    const object = op.params?.[where];
    if (!object) continue;
    for (const [name, field] of Object.entries(object.shape as Record<string, z.ZodType>)) {
      const schema = writer.write(field, 'input');
      const { description, ...rest } = schema;
      out.push({
        name,
        in: where,
        required: where === 'path' || !field.safeParse(undefined).success,
        ...(typeof description === 'string' ? { description } : {}),
        schema: rest,
      });
    }
  }
  return out;
}

function response(writer: SchemaWriter, spec: ResponseSpec): ResponseObject {
  const out: ResponseObject = { description: spec.description };
  if (spec.headers) {
    out.headers = Object.fromEntries(
      Object.entries(spec.headers).map(([name, h]) => [
        name,
        { description: h.description, schema: h.schema ?? { type: 'string' } },
      ]),
    );
  }
  const types = [spec.contentType ?? (spec.body ? 'application/json' : [])].flat();
  const bodies: Record<string, z.ZodType | undefined> =
    spec.content ?? Object.fromEntries(types.map((t) => [t, spec.body]));
  if (Object.keys(bodies).length) {
    out.content = Object.fromEntries(
      Object.entries(bodies).map(([t, body]) => [
        t,
        body ? { schema: writer.write(body, 'output', false) } : {},
      ]),
    );
  }
  return out;
}

function operation(writer: SchemaWriter, op: OperationSpec): OperationObject {
  const out: OperationObject = {
    operationId: op.operationId,
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    tags: [op.tag],
    responses: {},
  };
  if (op.security === 'bearer') out.security = [{ [BEARER]: [] }];
  if (op.security === 'optional-bearer') out.security = [{ [BEARER]: [] }, {}];
  const params = parameters(writer, op);
  if (params.length) out.parameters = params;
  if (op.body) {
    const schema = writer.write(op.body.schema, 'input');
    out.requestBody = {
      ...(op.body.description ? { description: op.body.description } : {}),
      required: op.body.required ?? true,
      content: Object.fromEntries((op.body.contentTypes ?? ['application/json']).map((t) => [t, { schema }])),
    };
  }
  for (const [status, spec] of Object.entries(op.responses)) out.responses[status] = response(writer, spec);
  return out;
}

export function openApiDocument(api: ApiSpec): OpenApiDocument {
  const writer = new SchemaWriter({ Problem: problemSchema, ...api.components });
  const paths: OpenApiDocument['paths'] = {};
  for (const op of api.operations) {
    const item = paths[op.path] ?? {};
    paths[op.path] = item;
    if (item[op.method]) throw new Error(`${op.method.toUpperCase()} ${op.path} is described twice`);
    item[op.method] = operation(writer, op);
  }
  return {
    openapi: '3.0.3',
    info: { title: api.title, version: api.version, description: api.description },
    tags: api.tags,
    paths,
    components: {
      schemas: writer.components(),
      securitySchemes: {
        [BEARER]: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      },
    },
  };
}
