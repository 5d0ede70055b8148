/**
 * fast-check generators for HTTP requests, derived from the OpenAPI documents the hub serves:
 * every path and method, path parameters, declared query parameters (valid-looking values from
 * their schemas and hostile ones), request bodies shaped like their schemas with wrong types and
 * out-of-range values mixed in, raw garbage bodies, odd content types and every kind of
 * credential.
 */
import fc from 'fast-check';

// biome-ignore lint/suspicious/noExplicitAny: OpenAPI documents are plain JSON of many shapes
type Json = any;

export interface Operation {
  /** Which document: core, billing, audit. */
  doc: string;
  method: string;
  /** The OpenAPI path template, e.g. /api/v1/messages/{id}. */
  path: string;
  params: { name: string; in: string; schema: Json }[];
  body: Json | undefined;
}

export interface FuzzRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | undefined;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** Percent-encodes the UTF-8 bytes of `s` (a lone surrogate becomes U+FFFD, as a client would send it). */
function percentEncode(s: string): string {
  let out = '';
  for (const byte of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-_.~!]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export function operationsOf(doc: string, spec: Json): Operation[] {
  const resolve = (schema: Json, depth = 0): Json => {
    if (!schema || depth > 8) return schema;
    if (typeof schema.$ref === 'string') {
      const name = schema.$ref.split('/').pop();
      return resolve(spec.components?.schemas?.[name], depth + 1);
    }
    return schema;
  };
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries<Json>(spec.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p: Json) => resolve(p));
      const body = resolve(op.requestBody?.content?.['application/json']?.schema);
      ops.push({ doc, method: method.toUpperCase(), path, params, body });
    }
  }
  return ops;
}

const hostileStrings = fc.constantFrom(
  '',
  ' ',
  '0',
  '-1',
  '1e309',
  'NaN',
  'null',
  'undefined',
  'true',
  '[]',
  '{}',
  '!ffffffff',
  '!00000000',
  '../../../../etc/passwd',
  '%00',
  '%',
  '%E0%A4%A',
  '\u0000',
  '\ud800',
  "' OR 1=1 --",
  '"; DROP TABLE readings; --',
  '<script>alert(1)</script>',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a log4shell probe, sent as text on purpose
  '${jndi:ldap://x}',
  '9'.repeat(40),
  'a'.repeat(5000),
  '2026-02-30T00:00:00Z',
  '2026-11-21T10:00:00',
  '+275760-09-13T00:00:00.000Z',
  '1970-01-01T00:00:00Z',
  '9999-12-31T23:59:59Z',
  'raw',
  '1h',
  '1d',
  'cursor',
);

const anyString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  hostileStrings,
);

/** A value for a schema: mostly its type (sometimes matching its pattern), sometimes anything. */
export function valueFor(schema: Json, depth = 0): fc.Arbitrary<unknown> {
  const loose = depth > 3 ? fc.constant(null) : fc.jsonValue({ maxDepth: 2 });
  if (!schema || typeof schema !== 'object') return fc.oneof(anyString, loose);
  const variants = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(variants) && variants.length > 0)
    return fc.oneof(...variants.map((v: Json) => valueFor(v, depth + 1)));
  const typed: fc.Arbitrary<unknown>[] = [];
  if (Array.isArray(schema.enum)) typed.push(fc.constantFrom(...schema.enum));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string': {
      typed.push(anyString);
      if (typeof schema.pattern === 'string') {
        try {
          typed.push(fc.stringMatching(new RegExp(schema.pattern)));
        } catch {
          // a pattern fast-check cannot generate from: plain strings only
        }
      }
      if (schema.format === 'date-time')
        typed.push(
          fc
            .date({ min: new Date('1999-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
            .map((d) => d.toISOString()),
        );
      break;
    }
    case 'integer':
    case 'number':
      typed.push(
        fc.integer(),
        fc.double({ noNaN: true }),
        fc.constantFrom(0, -1, 1, 2 ** 31, 2 ** 53, -(2 ** 53), 1e308, 0.5),
        fc.integer({ min: Math.ceil(schema.minimum ?? -1000), max: Math.floor(schema.maximum ?? 100_000) }),
      );
      break;
    case 'boolean':
      typed.push(fc.boolean());
      break;
    case 'array':
      typed.push(fc.array(valueFor(schema.items, depth + 1), { maxLength: 6 }));
      break;
    case 'object':
      if (depth < 4) typed.push(objectFor(schema, depth + 1));
      break;
  }
  if (typed.length === 0) return fc.oneof(anyString, loose);
  // Mostly well-typed (to get past the parser into validation and the handlers), sometimes not.
  return fc.oneof({ arbitrary: fc.oneof(...typed), weight: 4 }, { arbitrary: loose, weight: 1 });
}

function objectFor(schema: Json, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const props = Object.entries<Json>(schema.properties ?? {});
  const known = fc.record(Object.fromEntries(props.map(([k, s]) => [k, valueFor(s, depth)])), {
    requiredKeys: [],
  });
  // Plus, sometimes, a key nobody declared (a typo must be refused, never silently dropped).
  return fc
    .tuple(
      known,
      fc.option(fc.tuple(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 1 })), { nil: undefined }),
    )
    .map(([o, extra]) => (extra ? { ...o, [extra[0]]: extra[1] } : o));
}

/** Raw bodies no schema describes. */
const garbageBody = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.constantFrom(
    '',
    '{',
    '{"a":',
    'null',
    '[]',
    '[null]',
    '"text"',
    '1e99999',
    '{"__proto__":{"admin":true}}',
    '{"constructor":{"prototype":{"x":1}}}',
    `${'['.repeat(5000)}${']'.repeat(5000)}`,
    JSON.stringify({ data: 'x'.repeat(100_000) }),
    '\u0000\u0001\u0002',
  ),
);

const contentTypes = fc.constantFrom(
  'application/json',
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=utf-16',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/octet-stream',
  'application/problem+json',
  '',
);

export function requestFor(op: Operation, base: string, tokens: string[]): fc.Arbitrary<FuzzRequest> {
  const pathParams = op.params.filter((p) => p.in === 'path');
  const queryParams = op.params.filter((p) => p.in === 'query');
  const pathValues = fc.record(
    Object.fromEntries(
      pathParams.map((p) => [
        p.name,
        fc.oneof(
          valueFor(p.schema).map((v) => percentEncode(typeof v === 'string' ? v : (JSON.stringify(v) ?? ''))),
          anyString.map((v) => percentEncode(v)),
          // Raw, not encoded: broken escapes and slashes reach the router as sent.
          hostileStrings.filter((v) => !/[\s#?]/.test(v) && ![...v].some((c) => c.charCodeAt(0) < 0x20)),
        ),
      ]),
    ),
  );
  const query = fc.array(
    fc.oneof(
      ...(queryParams.length
        ? [
            fc
              .tuple(fc.constantFrom(...queryParams), fc.nat())
              .chain(([p]) =>
                valueFor(p.schema).map(
                  (v) => [p.name, typeof v === 'string' ? v : (JSON.stringify(v) ?? '')] as [string, string],
                ),
              ),
          ]
        : []),
      fc.tuple(fc.string({ maxLength: 10 }), anyString),
    ),
    { maxLength: 5 },
  );
  const body = op.body
    ? fc.oneof(
        { arbitrary: valueFor(op.body).map((v) => JSON.stringify(v) ?? 'null'), weight: 4 },
        { arbitrary: garbageBody, weight: 1 },
      )
    : fc.option(garbageBody, { nil: undefined, freq: 4 });
  const auth = fc.constantFrom(
    undefined,
    'Bearer ',
    'Bearer garbage',
    'Bearer a.b.c',
    'Basic cm9vdDpyb290',
    'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJyb290Iiwicm9sZXMiOlsiYWRtaW4iXX0.',
    ...tokens.map((t) => `Bearer ${t}`),
    ...tokens.map((t) => `Bearer ${t}`),
  );
  return fc.record({ pathValues, query, body, contentType: contentTypes, auth }).map((r) => {
    let path = op.path;
    for (const [name, value] of Object.entries(r.pathValues))
      path = path.replace(`{${name}}`, value || '%20');
    const search = r.query.map(([k, v]) => `${percentEncode(k)}=${percentEncode(v)}`).join('&');
    const headers: Record<string, string> = {};
    if (r.auth) headers.authorization = r.auth;
    const sendsBody = op.method !== 'GET' && r.body !== undefined;
    if (sendsBody && r.contentType) headers['content-type'] = r.contentType;
    return {
      method: op.method,
      url: `${base}${path}${search ? `?${search}` : ''}`,
      headers,
      body: sendsBody ? r.body : undefined,
    };
  });
}
