/**
 * The built web app at `/`: hashed assets cached for a year, index.html revalidated, the
 * precompressed variants sent to clients that accept them, browser routes answered with the
 * app, and API paths (and missing files) left to the API's 404 problem.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import type { Hono } from 'hono';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { standaloneApp, standaloneModuleHost } from '../../hub/module-host.js';
import { nodesRoutes } from '../../src/nodes/routes.js';
import { openDatabase } from '../../src/store/database.js';
import { webUiModule } from '../../src/ui-server/module.js';
import { webUiSettings } from '../../src/ui-server/settings.js';
import { chooseEncoding, StaticAssets } from '../../src/ui-server/static-assets.js';

const dir = mkdtempSync(join(tmpdir(), 'meshhub-web-'));
const INDEX =
  '<!doctype html><html><head><title>meshhub</title></head><body><div id="app"></div></body></html>';
const SCRIPT = `console.log(${JSON.stringify('x'.repeat(4000))});`;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function appWith(
  webRoot: string,
  tiles = 'https://tile.openstreetmap.org/{z}/{x}/{y}.png',
): Promise<Hono> {
  const { host, mounts, metrics } = await standaloneModuleHost({
    db: openDatabase(':memory:'),
    dataDir: mkdtempSync(join(dir, 'identity-')),
    log: pino({ level: 'silent' }),
  });
  mounts.mount(
    'test',
    '/api/v1/nodes',
    nodesRoutes({ list: () => [], page: () => ({ nodes: [], more: false }) } as never),
  );
  await host.create(webUiModule, webUiSettings.parse({ MAP_TILES: tiles, WEB_ROOT: webRoot }));
  return standaloneApp(mounts, metrics, '1.2.3');
}

let app: Hono;

beforeAll(async () => {
  const root = join(dir, 'web');
  mkdirSync(join(root, 'assets'), { recursive: true });
  writeFileSync(join(root, 'index.html'), INDEX);
  writeFileSync(join(root, 'assets', 'index-Ab12Cd34.js'), SCRIPT);
  writeFileSync(join(root, 'assets', 'index-Ab12Cd34.js.br'), brotliCompressSync(SCRIPT));
  writeFileSync(join(root, 'assets', 'index-Ab12Cd34.js.gz'), gzipSync(SCRIPT));
  writeFileSync(join(root, 'assets', 'index-Ef56Gh78.css'), `body{color:red}${' '.repeat(3000)}`);
  writeFileSync(join(root, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  app = await appWith(root);
});

describe('the web app at /', () => {
  it('serves index.html revalidated on every load, with a CSP that lets in only the tile server', async () => {
    const res = await app.request('/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('etag')).toMatch(/^".+"$/);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toMatch(/img-src 'self' data: blob: https:\/\/tile\.openstreetmap\.org(;|$)/);
    expect(await res.text()).toBe(INDEX);
  });

  it('caches hashed assets for a year as immutable, and sends brotli or gzip as the client accepts', async () => {
    const plain = await app.request('/assets/index-Ab12Cd34.js');
    expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(plain.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(plain.headers.get('content-encoding')).toBeNull();
    expect(await plain.text()).toBe(SCRIPT);

    const br = await app.request('/assets/index-Ab12Cd34.js', {
      headers: { 'accept-encoding': 'gzip, deflate, br' },
    });
    expect(br.headers.get('content-encoding')).toBe('br');
    expect(br.headers.get('vary')).toBe('Accept-Encoding');
    expect(brotliDecompressSync(Buffer.from(await br.arrayBuffer())).toString()).toBe(SCRIPT);

    const gz = await app.request('/assets/index-Ab12Cd34.js', {
      headers: { 'accept-encoding': 'gzip, br;q=0' },
    });
    expect(gz.headers.get('content-encoding')).toBe('gzip');
    expect(gunzipSync(Buffer.from(await gz.arrayBuffer())).toString()).toBe(SCRIPT);

    // A text file the build did not compress is gzipped once by the hub.
    const css = await app.request('/assets/index-Ef56Gh78.css', { headers: { 'accept-encoding': 'gzip' } });
    expect(css.headers.get('content-encoding')).toBe('gzip');
    expect(gunzipSync(Buffer.from(await css.arrayBuffer())).toString()).toMatch(/^body\{color:red\}/);
  });

  it('keeps only the compressed forms of a text file in memory and reads its plain bytes from disk', async () => {
    const assets = StaticAssets.load(join(dir, 'web'))!;
    const script = assets.get('/assets/index-Ab12Cd34.js')!;
    expect(script.body).toBeUndefined();
    expect(Object.keys(script.encoded).sort()).toEqual(['br', 'gzip']);
    // A file with no compressed form (too small to gzip) keeps its bytes.
    expect(assets.get('/favicon.svg')!.body).toBeDefined();

    const head = await app.request('/assets/index-Ab12Cd34.js', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(Buffer.byteLength(SCRIPT)));
  });

  it('answers 404, not 500, for a file a rebuild removed since start (a client without compression)', async () => {
    const root = join(dir, 'web-rebuilt');
    mkdirSync(join(root, 'assets'), { recursive: true });
    writeFileSync(join(root, 'index.html'), INDEX);
    writeFileSync(join(root, 'assets', 'old-Zz99Yy88.js'), SCRIPT);
    const rebuilt = await appWith(root);
    rmSync(join(root, 'assets', 'old-Zz99Yy88.js'));
    const plain = await rebuilt.request('/assets/old-Zz99Yy88.js');
    expect(plain.status).toBe(404);
    expect(plain.headers.get('content-type')).toContain('application/problem+json');
    // The compressed form was read at start and is still served.
    const gz = await rebuilt.request('/assets/old-Zz99Yy88.js', { headers: { 'accept-encoding': 'gzip' } });
    expect(gz.status).toBe(200);
    expect(gunzipSync(Buffer.from(await gz.arrayBuffer())).toString()).toBe(SCRIPT);
  });

  it('answers a matching If-None-Match with 304 and no body', async () => {
    const first = await app.request('/assets/index-Ab12Cd34.js');
    const again = await app.request('/assets/index-Ab12Cd34.js', {
      headers: { 'if-none-match': first.headers.get('etag')! },
    });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    const changed = await app.request('/assets/index-Ab12Cd34.js', {
      headers: { 'if-none-match': '"other"' },
    });
    expect(changed.status).toBe(200);
  });

  it.each(['/nodes/!a1b2c3d4', '/nodes/!a1b2c3d4?range=7d', '/chat', '/chat/!a1b2c3d4', '/anything/else'])(
    'answers the app’s browser route %s with index.html, so a reload or a shared link works',
    async (path) => {
      const res = await app.request(path);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(INDEX);
    },
  );

  it.each(['/api/v1/nope', '/api', '/assets/index-Old00000.js', '/favicon.ico', '/.well-known/nothing'])(
    'leaves %s to the API: 404 problem details, never the app',
    async (path) => {
      const res = await app.request(path);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
    },
  );

  it('leaves the real routes registered before the app to answer', async () => {
    expect((await app.request('/api/v1/nodes')).status).toBe(200);
    expect(((await (await app.request('/health')).json()) as { version: string }).version).toBe('1.2.3');
  });

  it('picks encodings by RFC 9110 q-values', () => {
    const both = { br: new Uint8Array(1), gzip: new Uint8Array(1) };
    expect(chooseEncoding(undefined, both)).toBeUndefined();
    expect(chooseEncoding('gzip', both)).toBe('gzip');
    expect(chooseEncoding('br;q=0, gzip;q=0.5', both)).toBe('gzip');
    expect(chooseEncoding('*', both)).toBe('br');
    expect(chooseEncoding('*, br;q=0', both)).toBe('gzip');
    expect(chooseEncoding('identity', both)).toBeUndefined();
    expect(chooseEncoding('br', { gzip: new Uint8Array(1) })).toBeUndefined();
  });
});

describe('a hub whose web app is not built', () => {
  it('explains how to build it instead of showing a blank page, and the API still answers', async () => {
    const bare = await appWith(join(dir, 'missing'));
    const res = await bare.request('/');
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toContain('npm run build');
    expect((await bare.request('/api/v1/nodes')).status).toBe(200);
    expect((await bare.request('/assets/index-Ab12Cd34.js')).status).toBe(404);
  });
});
