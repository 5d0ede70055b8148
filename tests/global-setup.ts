import { spawnSync } from 'node:child_process';

/**
 * Several test files run the built hub (dist/), as `npm start` does. Build it once here, before
 * any file runs, so parallel files never race one another's tsc; their own build calls then find
 * dist/ fresh and return at once.
 */
export default function setup(): void {
  const result = spawnSync(process.execPath, ['scripts/start.mjs', '--build-only'], { stdio: 'inherit' });
  if (result.status !== 0) throw new Error('building dist/ failed: see the tsc output above');
}
