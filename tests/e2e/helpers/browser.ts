/**
 * Headless Chromium for the end-to-end tests (Debian's chromium driven by playwright-core).
 * Every page is guarded: a console error or an uncaught exception fails the test, unless the
 * test declared that exact failed request as expected (a blocked tile, a refused 403…), and
 * nothing may leave the machine: requests to any host but loopback are aborted and recorded.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect } from 'vitest';

export function chromiumPath(): string | undefined {
  return [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
    (p): p is string => !!p && existsSync(p),
  );
}

/** `describe` when Chromium is installed, else skipped (global-setup explains, and fails under CI). */
export const describeInBrowser = chromiumPath() ? describe : describe.skip;

export const ARTIFACTS = join(process.cwd(), '.tmp', 'e2e');

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath()!,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

export interface GuardedPage {
  page: Page;
  context: BrowserContext;
  /** Console errors and uncaught exceptions nobody declared as expected. */
  problems: string[];
  /** URLs of requests that tried to leave the machine (all aborted). */
  external: string[];
  /** Failed loads of matching URLs are expected (their console errors are not problems). */
  expectFailedRequests(url: RegExp): void;
  /** Fails the test if the page logged an unexpected error. */
  assertClean(): void;
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

export async function openPage(
  browser: Browser,
  options: { width?: number; height?: number; acceptDownloads?: boolean; locale?: string } = {},
): Promise<GuardedPage> {
  const context = await browser.newContext({
    viewport: { width: options.width ?? 1280, height: options.height ?? 800 },
    // The UI speaks the browser's language: English unless a test asks for another.
    locale: options.locale ?? 'en-US',
    acceptDownloads: options.acceptDownloads ?? false,
    reducedMotion: 'reduce',
  });
  const page = await context.newPage();
  const problems: string[] = [];
  const external: string[] = [];
  const expected: RegExp[] = [];
  await context.route(
    (url) => !LOOPBACK.has(url.hostname),
    async (route) => {
      external.push(route.request().url());
      await route.abort('internetdisconnected');
    },
  );
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const url = message.location()?.url ?? '';
    const failedLoad = /^Failed to load resource|net::ERR_/.test(message.text());
    if (failedLoad && expected.some((pattern) => pattern.test(url))) return;
    problems.push(`console.error: ${message.text()} (${url})`);
  });
  page.on('pageerror', (error) => problems.push(`uncaught: ${error.stack ?? error.message}`));
  return {
    page,
    context,
    problems,
    external,
    expectFailedRequests: (url) => expected.push(url),
    assertClean: () => expect(problems, 'console errors or uncaught exceptions in the page').toEqual([]),
    close: () => context.close(),
  };
}

/**
 * One Chromium for a describe block: launched in a `beforeAll` registered before the block's own
 * (so it starts while the block starts its hubs), closed after all. `open()` gives a test its
 * guarded page; after each test the page last opened must have logged no unexpected error, and is
 * closed.
 */
export function useGuardedPages(): {
  open(options?: Parameters<typeof openPage>[1]): Promise<GuardedPage>;
} {
  let browser: Promise<Browser> | undefined;
  let current: GuardedPage | undefined;
  beforeAll(() => {
    browser = launchBrowser();
    browser.catch(() => {}); // a failed launch is reported by open()
  });
  afterEach(async () => {
    const guarded = current;
    current = undefined;
    guarded?.assertClean();
    await guarded?.close();
  });
  afterAll(async () => {
    await browser?.then(
      (b) => b.close(),
      () => {},
    );
  });
  return {
    async open(options) {
      if (!browser) throw new Error('useGuardedPages: no browser before beforeAll');
      current = await openPage(await browser, options);
      return current;
    },
  };
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: false });
  return path;
}
