/**
 * `npm run -s meshhub -- sync key > north.jwks.json` writes the key and nothing else, even when
 * scripts/start.mjs builds first (issue 25): tsc's and Vite's output go to stderr. Run on a
 * scratch copy of start.mjs whose tsc and vite are stand-ins that print to stdout, so the
 * real dist/ is never rebuilt.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, expect, it } from 'vitest';

const root = mkdtempSync(join(tmpdir(), 'meshhub-start-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function put(path: string, text: string): void {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), text);
}

it('prints only the command’s own output on stdout while it builds dist/ and the web app', () => {
  mkdirSync(join(root, 'scripts'));
  copyFileSync(join(process.cwd(), 'scripts', 'start.mjs'), join(root, 'scripts', 'start.mjs'));
  put('src/web/main.tsx', '');
  put('package.json', '{"type":"module"}');
  put(
    'node_modules/typescript/bin/tsc',
    `const fs = require('node:fs'); const path = require('node:path');
     const dist = path.join(__dirname, '..', '..', '..', 'dist');
     console.log('tsc: compiled 900 files');
     fs.mkdirSync(path.join(dist, 'hub'), { recursive: true });
     fs.writeFileSync(path.join(dist, 'hub', 'cli.js'), "process.stdout.write('{\\"keys\\":[]}\\\\n');");
     fs.writeFileSync(path.join(dist, '.tsbuildinfo'), '');`,
  );
  put('node_modules/typescript/package.json', '{"type":"commonjs"}');
  put(
    'node_modules/vite/bin/vite.js',
    `import fs from 'node:fs'; import path from 'node:path';
     console.log('vite v7 building for production...');
     const web = path.join(import.meta.dirname, '..', '..', '..', 'dist', 'web');
     fs.mkdirSync(web, { recursive: true });
     fs.writeFileSync(path.join(web, 'index.html'), '');`,
  );
  const run = spawnSync(process.execPath, [join(root, 'scripts', 'start.mjs'), 'sync', 'key'], {
    cwd: root,
    encoding: 'utf8',
  });
  expect(run.status, run.stderr).toBe(0);
  expect(run.stdout).toBe('{"keys":[]}\n');
  expect(run.stderr).toContain('tsc: compiled 900 files');
  expect(run.stderr).toContain('vite v7 building for production...');
});
