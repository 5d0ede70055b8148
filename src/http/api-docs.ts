/**
 * Serves an OpenAPI document: `GET /openapi.json` always, and, when enabled (API_DOCS), `GET /docs`:
 * the document as one HTML page, rendered here, with no script at all — the hub often has no
 * internet, so nothing may come from a CDN, and a page without scripts passes any CSP. Each
 * operation and schema is a <details> element; `$ref`s link to the schema they name.
 */
import { Hono } from 'hono';
import type { JsonSchema, OpenApiDocument, OperationObject, ResponseObject } from './openapi.js';

export interface ApiDocsOptions {
  /** Serve the HTML page at /docs too (default false). */
  docs?: boolean;
}

const DOCS_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function openApiRoutes(doc: OpenApiDocument, options: ApiDocsOptions = {}): Hono {
  const app = new Hono();
  const json = JSON.stringify(doc);
  app.get('/openapi.json', (c) =>
    c.body(json, 200, { 'content-type': 'application/json', 'cache-control': 'no-cache' }),
  );
  if (options.docs) {
    const html = apiDocsPage(doc);
    app.get('/docs', (c) =>
      c.html(html, 200, { 'content-security-policy': DOCS_CSP, 'cache-control': 'no-cache' }),
    );
  }
  return app;
}

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

/** Plain text with `code` spans and line breaks: how the descriptions are written. */
const prose = (text: string): string =>
  escapeHtml(text)
    .replace(/`([^`]+)`/g, '<code>$1</code>')
    .replace(/\n/g, '<br>');

const anchor = (text: string): string => text.replace(/[^A-Za-z0-9_-]/g, '-');

function schemaBlock(schema: JsonSchema | undefined): string {
  if (!schema) return '';
  const json = escapeHtml(JSON.stringify(schema, null, 2));
  // "#/components/schemas/Reading" becomes a link to that schema below.
  const linked = json.replace(
    /&#34;#\/components\/schemas\/([A-Za-z0-9_]+)&#34;/g,
    (_m, name: string) => `&#34;<a href="#schema-${anchor(name)}">#/components/schemas/${name}</a>&#34;`,
  );
  return `<pre>${linked}</pre>`;
}

function parametersTable(op: OperationObject): string {
  if (!op.parameters?.length) return '';
  const rows = op.parameters
    .map(
      (p) =>
        `<tr><td><code>${escapeHtml(p.name)}</code></td><td>${p.in}</td><td>${p.required ? 'yes' : ''}</td>` +
        `<td>${p.description ? prose(p.description) : ''}</td><td><code>${escapeHtml(JSON.stringify(p.schema))}</code></td></tr>`,
    )
    .join('');
  return `<h4>Parameters</h4><table><tr><th>name</th><th>in</th><th>required</th><th>description</th><th>schema</th></tr>${rows}</table>`;
}

function responseBlock(status: string, response: ResponseObject): string {
  const headers = Object.entries(response.headers ?? {})
    .map(([name, h]) => `<li><code>${escapeHtml(name)}</code>: ${prose(h.description)}</li>`)
    .join('');
  const content = Object.entries(response.content ?? {});
  const types = content.map(([type]) => `<code>${escapeHtml(type)}</code>`).join(', ');
  return (
    `<div class="response"><h4>${escapeHtml(status)}</h4><p>${prose(response.description)}</p>` +
    (headers ? `<ul>${headers}</ul>` : '') +
    (types ? `<p>${types}</p>` : '') +
    schemaBlock(content[0]?.[1].schema) +
    '</div>'
  );
}

function operationBlock(method: string, path: string, op: OperationObject): string {
  const secured = op.security?.some((s) => Object.keys(s).length > 0);
  const optional = op.security?.some((s) => Object.keys(s).length === 0);
  const lock = secured ? `<span class="auth">bearer${optional ? ' (optional)' : ''}</span>` : '';
  const body = op.requestBody
    ? `<h4>Request body</h4><p>${Object.keys(op.requestBody.content)
        .map((t) => `<code>${escapeHtml(t)}</code>`)
        .join(', ')}${op.requestBody.description ? ` — ${prose(op.requestBody.description)}` : ''}</p>` +
      schemaBlock(Object.values(op.requestBody.content)[0]?.schema)
    : '';
  const responses = Object.entries(op.responses)
    .map(([status, r]) => responseBlock(status, r))
    .join('');
  return (
    `<details id="op-${anchor(op.operationId)}"><summary><span class="method ${method}">${method.toUpperCase()}</span> ` +
    `<code>${escapeHtml(path)}</code> ${escapeHtml(op.summary)} ${lock}</summary>` +
    (op.description ? `<p>${prose(op.description)}</p>` : '') +
    parametersTable(op) +
    body +
    `<h4>Responses</h4>${responses}</details>`
  );
}

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#1d2733}
code,pre{font-family:ui-monospace,monospace;font-size:13px}pre{background:#f4f6f8;padding:.6rem;overflow:auto;max-height:28rem}
details{border:1px solid #d5dbe1;border-radius:6px;margin:.4rem 0;padding:.3rem .7rem}summary{cursor:pointer}
.method{display:inline-block;min-width:4.2rem;font-weight:600;text-align:center;border-radius:4px;color:#fff;background:#56606b}
.get{background:#2f6fb0}.post{background:#2f8f4e}.patch{background:#b07a1f}.put{background:#7a4fb0}.delete{background:#b03a2f}
.auth{font-size:12px;border:1px solid #b07a1f;border-radius:4px;padding:0 .3rem;color:#8a5a00}
table{border-collapse:collapse}td,th{border:1px solid #d5dbe1;padding:.2rem .4rem;text-align:left;vertical-align:top}
.response{border-left:3px solid #d5dbe1;padding-left:.7rem;margin:.5rem 0}h4{margin:.6rem 0 .2rem}`;

/** The whole document as a page: operations grouped by tag, then the named schemas. */
export function apiDocsPage(doc: OpenApiDocument): string {
  const byTag = new Map<string, string[]>(doc.tags.map((t) => [t.name, []]));
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!op) continue;
      const tag = op.tags[0] ?? 'other';
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)!.push(operationBlock(method, path, op));
    }
  }
  const descriptions = new Map(doc.tags.map((t) => [t.name, t.description]));
  const sections = [...byTag]
    .filter(([, ops]) => ops.length)
    .map(
      ([tag, ops]) =>
        `<section id="tag-${anchor(tag)}"><h2>${escapeHtml(tag)}</h2>` +
        `<p>${prose(descriptions.get(tag) ?? '')}</p>${ops.join('')}</section>`,
    )
    .join('');
  const schemas = Object.entries(doc.components.schemas)
    .map(
      ([name, schema]) =>
        `<details id="schema-${anchor(name)}"><summary><code>${escapeHtml(name)}</code></summary>${schemaBlock(schema)}</details>`,
    )
    .join('');
  const nav = [...byTag.keys()].map((t) => `<a href="#tag-${anchor(t)}">${escapeHtml(t)}</a>`).join(' · ');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(doc.info.title)}</title><style>${STYLE}</style></head>
<body><h1>${escapeHtml(doc.info.title)} <small>${escapeHtml(doc.info.version)}</small></h1>
<p>${prose(doc.info.description)}</p>
<p>OpenAPI ${escapeHtml(doc.openapi)}: <a href="openapi.json">openapi.json</a> · ${nav} · <a href="#schemas">schemas</a></p>
${sections}<section id="schemas"><h2>Schemas</h2>${schemas}</section></body></html>
`;
}
