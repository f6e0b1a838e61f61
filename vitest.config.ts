import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/globalSetup.ts'],
    pool: 'forks',
    reporters: ['verbose'],
    // The machine is shared and noisy: generous limits, no timing assertions in tests.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
