import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    // The browser tests and the reliability suite have configs of their own.
    exclude: ['tests/e2e/**', 'tests/reliability/**', 'node_modules/**', 'dist/**'],
    globalSetup: ['tests/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
