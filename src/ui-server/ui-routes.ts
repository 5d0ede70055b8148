/**
 * The web app at `/`: files of the build by exact path, and index.html for every other
 * browser route (`/nodes/!a1b2c3d4`, `/chat`, …) so a reload or a shared link opens the right
 * view. API-looking paths (`/api/…`, `/health`, `/metrics`, `/.well-known/…`, `/mqtt`) and paths
 * with a file extension never fall back: they pass on to the API's 404 problem.
 */
import { readFile } from 'node:fs/promises';
import { type Context, Hono } from 'hono';
import { chooseEncoding, REVALIDATE, type StaticAsset, type StaticAssets } from './static-assets.js';

const RESERVED = /^\/(?:api(?:\/|$)|health$|metrics$|\.well-known(?:\/|$)|mqtt$)/;

export interface UiRoutesOptions {
  /** The loaded build; undefined when dist/web is missing. */
  assets: StaticAssets | undefined;
  /** Extra `img-src` origins: where online map tiles come from. */
  tileOrigins: readonly string[];
  /**
   * The identity provider's origins (AUTH_ISSUER, AUTH_JWKS_URL): the audit console's sign-in
   * fetches its discovery document and token endpoint (connect), and may frame or post to it
   * (spec "Gaps and notes": connect, frame and form-action, nothing else).
   */
  signInOrigins?: readonly string[];
}

export function contentSecurityPolicy(
  tileOrigins: readonly string[],
  signInOrigins: readonly string[] = [],
): string {
  const idp = signInOrigins.length ? ` ${signInOrigins.join(' ')}` : '';
  return [
    "default-src 'self'",
    "script-src 'self'",
    // Leaflet and uPlot position elements with inline styles.
    "style-src 'self' 'unsafe-inline'",
    ['img-src', "'self'", 'data:', 'blob:', ...tileOrigins].join(' '),
    `connect-src 'self'${idp}`,
    ...(idp ? [`frame-src${idp}`] : []),
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    `form-action 'self'${idp}`,
    "frame-ancestors 'none'",
  ].join('; ');
}

function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

async function serve(
  c: Context,
  asset: StaticAsset,
  extraHeaders: Record<string, string>,
): Promise<Response | undefined> {
  const headers: Record<string, string> = {
    'content-type': asset.contentType,
    'cache-control': asset.cacheControl,
    etag: asset.etag,
    vary: 'Accept-Encoding',
    'x-content-type-options': 'nosniff',
    ...extraHeaders,
  };
  if (matchesEtag(c.req.header('if-none-match'), asset.etag))
    return new Response(null, { status: 304, headers });
  const encoding = chooseEncoding(c.req.header('accept-encoding'), asset.encoded);
  if (encoding) headers['content-encoding'] = encoding;
  headers['content-length'] = String(encoding ? asset.encoded[encoding]!.byteLength : asset.size);
  if (c.req.method === 'HEAD') return new Response(null, { status: 200, headers });
  let body = encoding ? asset.encoded[encoding]! : asset.body;
  if (!body) {
    try {
      body = await readFile(asset.file);
    } catch {
      // Gone from dist/web since start (a rebuild replaced it): not found, like any missing file.
      return undefined;
    }
  }
  return new Response(body, { status: 200, headers });
}

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>meshhub: web app not built</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; padding: 0 1rem; line-height: 1.5">
<h1>The web app is not built yet</h1>
<p>The hub is running and its API answers, but <code>dist/web</code> is missing.
Run <code>npm run build</code> (or <code>npm start</code>, which builds it), then reload this page.</p>
<p><a href="/health">Hub health</a> · <a href="/api/v1/weather/latest">Latest readings (JSON)</a></p>
</body></html>`;

export function uiRoutes(options: UiRoutesOptions): Hono {
  const { assets } = options;
  const app = new Hono();
  const htmlHeaders = {
    'content-security-policy': contentSecurityPolicy(options.tileOrigins, options.signInOrigins),
    'referrer-policy': 'strict-origin-when-cross-origin',
    'x-frame-options': 'DENY',
  };

  app.get('*', async (c, next) => {
    const path = c.req.path;
    if (RESERVED.test(path)) return next();
    if (!assets) {
      if (/\.[a-z0-9]+$/i.test(path)) return next();
      return c.html(NOT_BUILT, 503, { 'cache-control': REVALIDATE, 'retry-after': '30' });
    }
    const file = assets.get(path === '/' ? '/index.html' : path);
    if (file) {
      const served = await serve(c, file, file.contentType.startsWith('text/html') ? htmlHeaders : {});
      if (served) return served;
      return next();
    }
    // A missing file (an old hashed asset, a typo) is a 404, not the app: a browser would run HTML as a script.
    if (/\.[a-z0-9]+$/i.test(path.slice(path.lastIndexOf('/')))) return next();
    return (await serve(c, assets.index, htmlHeaders)) ?? next();
  });
  return app;
}
