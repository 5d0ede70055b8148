/**
 * The built web app (dist/web), read into memory once, as browsers fetch it: a Pi's SD card is
 * slower than its RAM. Each text file keeps its `.br` and `.gz` siblings when the build wrote
 * them (a text file without one gets gzip here, once). Its identity bytes, which only a client
 * that accepts no compression gets, stay on disk and are read per request: every browser
 * accepts gzip, and holding them too took 2.2 MB of the hub's memory (issue 26). A file with
 * no compressed form (an image) keeps its bytes in memory. Hashed files
 * under `assets/` never change: they are cached for a year as immutable; everything else
 * (index.html above all) is `no-cache`, revalidated by ETag, so a new build shows at once.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { gzipSync } from 'node:zlib';

export type ContentEncoding = 'br' | 'gzip';

export interface StaticAsset {
  /** URL path, e.g. `/assets/index-3f2a1b.js`. */
  path: string;
  contentType: string;
  cacheControl: string;
  etag: string;
  /** The file on disk, read for a client that accepts no encoding when `body` is not kept. */
  file: string;
  /** Identity length, for Content-Length. */
  size: number;
  /** Identity bytes, kept only when the file has no compressed form. */
  body: Uint8Array | undefined;
  encoded: Partial<Record<ContentEncoding, Uint8Array>>;
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.webmanifest': 'application/manifest+json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json',
};

const COMPRESSIBLE = new Set([
  '.html',
  '.js',
  '.mjs',
  '.css',
  '.json',
  '.webmanifest',
  '.svg',
  '.txt',
  '.map',
]);
export const IMMUTABLE = 'public, max-age=31536000, immutable';
export const REVALIDATE = 'no-cache';

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) walk(full, out);
    else out.push(full);
  }
  return out;
}

export class StaticAssets {
  private constructor(
    private readonly byPath: Map<string, StaticAsset>,
    readonly root: string,
  ) {}

  /** Undefined when `root` holds no index.html (the web app is not built). */
  static load(root: string): StaticAssets | undefined {
    if (!existsSync(join(root, 'index.html'))) return undefined;
    const files = walk(root);
    const present = new Set(files);
    const byPath = new Map<string, StaticAsset>();
    for (const file of files) {
      const ext = extname(file);
      if (ext === '.br' || ext === '.gz') continue;
      const body = readFileSync(file);
      const path = `/${relative(root, file).split(sep).join('/')}`;
      const encoded: StaticAsset['encoded'] = {};
      if (present.has(`${file}.br`)) encoded.br = readFileSync(`${file}.br`);
      if (present.has(`${file}.gz`)) encoded.gzip = readFileSync(`${file}.gz`);
      else if (COMPRESSIBLE.has(ext) && body.length > 1024) encoded.gzip = gzipSync(body, { level: 9 });
      byPath.set(path, {
        path,
        contentType: CONTENT_TYPES[ext] ?? 'application/octet-stream',
        cacheControl: path.startsWith('/assets/') ? IMMUTABLE : REVALIDATE,
        etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
        file,
        size: body.length,
        body: encoded.br || encoded.gzip ? undefined : body,
        encoded,
      });
    }
    return new StaticAssets(byPath, root);
  }

  get(path: string): StaticAsset | undefined {
    return this.byPath.get(path);
  }

  get index(): StaticAsset {
    return this.byPath.get('/index.html')!;
  }

  get paths(): string[] {
    return [...this.byPath.keys()];
  }
}

/** The best encoding the client accepts (RFC 9110 §12.5.3), brotli first; `q=0` refuses one. */
export function chooseEncoding(
  acceptEncoding: string | undefined,
  available: Partial<Record<ContentEncoding, Uint8Array>>,
): ContentEncoding | undefined {
  if (!acceptEncoding) return undefined;
  const accepted = new Map<string, number>();
  for (const part of acceptEncoding.toLowerCase().split(',')) {
    const [token, ...params] = part.trim().split(';');
    if (!token) continue;
    let q = 1;
    for (const param of params) {
      const m = /^\s*q=([0-9.]+)\s*$/.exec(param);
      if (m) q = Number(m[1]);
    }
    accepted.set(token.trim(), Number.isFinite(q) ? q : 0);
  }
  const wants = (coding: string) => (accepted.get(coding) ?? accepted.get('*') ?? 0) > 0;
  if (available.br && wants('br')) return 'br';
  if (available.gzip && wants('gzip')) return 'gzip';
  return undefined;
}
