import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    // A board can be busy with another test's job: a test waits for its turn.
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
