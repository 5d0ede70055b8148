import { defineConfig } from 'vitest/config';

// The browser end-to-end tests (tests/e2e): real headless Chromium against real hubs on the
// simulator. One file at a time: each starts hubs and a browser, and the machine has two cores.
export default defineConfig({
  test: {
    include: ['tests/e2e/**/*.test.ts'],
    globalSetup: ['tests/e2e/global-setup.ts'],
    testTimeout: 90_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
