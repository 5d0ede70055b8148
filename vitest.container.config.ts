import { defineConfig } from 'vitest/config';

// The container image tests (tests/container/image.test.ts, then image-arm64.test.ts): builds the base image and the
// Containerfile with podman, then runs the image. Minutes, not seconds: `.ci/run` runs it as a
// step of its own, and `npm test` leaves it out. It runs under CI=true or MESHHUB_CONTAINER_TEST=1.
export default defineConfig({
  test: {
    include: ['tests/container/image.test.ts', 'tests/container/image-arm64.test.ts'],
    globalSetup: ['tests/global-setup.ts'],
    testTimeout: 300_000,
    // Building the base and the image on a fresh machine (npm ci compiles the native modules).
    hookTimeout: 1_800_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
