/**
 * Builds the web app into dist/web: hashed files under assets/ (served as immutable), index.html
 * (no-cache), and a .br and .gz beside every text file so the hub sends them as they are.
 * JSX compiles for Preact with Vite's own transform (oxc); no plugin needed.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { defineConfig, type Plugin } from 'vite';

const here = import.meta.dirname;
const outDir = resolve(here, '../../dist/web');

function precompress(): Plugin {
  return {
    name: 'meshhub-precompress',
    apply: 'build',
    writeBundle() {
      const walk = (dir: string): string[] =>
        readdirSync(dir).flatMap((name) => {
          const full = join(dir, name);
          return statSync(full).isDirectory() ? walk(full) : [full];
        });
      for (const file of walk(outDir)) {
        if (!/\.(html|js|css|svg|json|webmanifest|txt)$/.test(file)) continue;
        const body = readFileSync(file);
        if (body.length < 1024) continue;
        writeFileSync(`${file}.gz`, gzipSync(body, { level: 9 }));
        writeFileSync(
          `${file}.br`,
          brotliCompressSync(body, {
            params: {
              [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
              [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
            },
          }),
        );
      }
    },
  };
}

export default defineConfig({
  root: here,
  base: '/',
  publicDir: resolve(here, 'public'),
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir,
    emptyOutDir: true,
    target: 'es2022',
    assetsDir: 'assets',
    sourcemap: false,
    reportCompressedSize: false,
    // Every browser that runs this app supports modulepreload: leave the polyfill out.
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 200,
  },
  plugins: [precompress()],
});
