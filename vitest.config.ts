import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    // The browser tests, the reliability suite and the container image have configs of their own.
    exclude: [
      'tests/e2e/**',
      'tests/reliability/**',
      // tests/container/image*.test.ts build and run images for minutes: vitest.container.config.ts.
      'tests/container/image*.test.ts',
      'node_modules/**',
      'dist/**',
    ],
    globalSetup: ['tests/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
