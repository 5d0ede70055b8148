/**
 * The "done when": `npm start` on a machine with no radio and no internet, then
 * http://localhost:<port>/ shows the live map of the simulated mesh. Runs what `npm start`
 * runs (scripts/start.mjs, which builds dist/ and the web app when stale) as a real process.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { HUB_NODE_FLAGS } from '../../hub/node-flags.js';
import { loopbackListeners } from '../../scripts/bench/lib/hub-env.js';
import { outputOf } from '../helpers/cli.js';
import { freePort, waitFor } from '../helpers/hub.js';
import { describeInBrowser, launchBrowser, openPage } from './helpers/browser.js';

describeInBrowser('npm start, then the browser', () => {
  let browser: Browser;
  let child: ChildProcess;
  let dataDir: string;
  let port: number;
  let output: () => string;

  beforeAll(async () => {
    port = await freePort();
    dataDir = mkdtempSync(join(tmpdir(), 'meshhub-npm-start-'));
    // The defaults, except where a test machine differs from a Pi: loopback, a free port, a temp dir.
    child = spawn(process.execPath, [...HUB_NODE_FLAGS, 'scripts/start.mjs', 'start'], {
      env: {
        ...process.env,
        ...loopbackListeners(dataDir, port),
        SIM_PORT: '0',
        RADIO_PROBE_TIMEOUT_MS: '500',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    output = outputOf(child);
    browser = await launchBrowser();
    await waitFor(
      () =>
        fetch(`http://127.0.0.1:${port}/health`).then(
          (r) => r.ok,
          () => undefined,
        ),
      60_000,
      () => `the hub to answer (log so far: ${output().slice(-500)})`,
    );
  });

  afterAll(async () => {
    await browser?.close();
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('shows the live map of the simulated mesh at /', async () => {
    const guarded = await openPage(browser);
    const { page } = guarded;
    // Default MAP_TILES is OpenStreetMap online; this machine has no internet.
    guarded.expectFailedRequests(/^https:\/\/tile\.openstreetmap\.org\//);
    await page.goto(`http://127.0.0.1:${port}/`);
    await expect
      .poll(() => page.locator('.node-marker').count(), { timeout: 20_000 })
      .toBeGreaterThanOrEqual(6);
    await page.getByTestId('simulator-banner').waitFor();
    await expect.poll(() => page.getByTestId('radio-state').innerText()).toMatch(/connected/);
    expect(output()).toMatch(/running the built-in simulator/);
    guarded.assertClean();
    await guarded.close();
  });
});
