/** Headless Chromium for the web bench's audit console render and scripts/screenshot.ts. */
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/** The Chromium executable: CHROMIUM_PATH, else the distribution's; undefined when there is none. */
export function findChromium(): string | undefined {
  return [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
    (p): p is string => !!p && existsSync(p),
  );
}

/** Chromium at `executablePath`, headless, without the GPU or background traffic. */
export function launchHeadlessChromium(executablePath: string | undefined): Promise<Browser> {
  return chromium.launch({
    executablePath,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--no-first-run',
    ],
  });
}
