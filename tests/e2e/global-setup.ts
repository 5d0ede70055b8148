/**
 * Before the browser tests: Chromium must be there (under CI it must: a missing browser fails
 * the run instead of passing it silently), and dist/ (server and web app) must be current.
 */
import { spawnSync } from 'node:child_process';
import { chromiumPath } from './helpers/browser.js';

export default function setup(): void {
  const ci = ['true', '1', 'yes'].includes(String(process.env.CI).toLowerCase());
  if (!chromiumPath()) {
    if (ci) {
      throw new Error(
        'CI: the browser tests need Chromium at /usr/bin/chromium (apt-get install -y chromium) or CHROMIUM_PATH',
      );
    }
    process.stderr.write(
      '\n[e2e] SKIPPED: Chromium was not found at /usr/bin/chromium (or CHROMIUM_PATH).\n' +
        '[e2e] Install it with `apt-get install -y chromium` to run the browser tests.\n\n',
    );
    return;
  }
  const built = spawnSync(process.execPath, ['scripts/start.mjs', '--build-only'], { stdio: 'inherit' });
  if (built.status !== 0) throw new Error('building dist/ (server and web app) failed');
}
