import { defineConfig } from 'vitest/config';

// The reliability suite (tests/reliability, docs/reliability.md): the built hub as a child
// process under SIGKILL, radio faults, a full disk, fuzzed input and a soak. One file at a time:
// each runs real processes, and the machine has two cores. Every scenario prints its seed
// (RELIABILITY_SEED repeats a run) and ends with exact counts.
export default defineConfig({
  test: {
    include: ['tests/reliability/**/*.test.ts'],
    globalSetup: ['tests/global-setup.ts'],
    testTimeout: 300_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
