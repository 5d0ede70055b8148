import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project root: the nearest folder above this file that holds package.json (works from src/ and dist/src/). */
export function projectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'VERSION'))) return dir;
    dir = dirname(dir);
  }
  return process.cwd();
}

/** The version from the VERSION file (spec: GET /api/version returns it). */
export function readVersion(root = projectRoot()): string {
  try {
    return readFileSync(join(root, 'VERSION'), 'utf8').trim() || '0.0.0';
  } catch {
    return '0.0.0';
  }
}
