import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    exclude: ['node_modules/**', 'data/**'],
    // Emulator-backed tests spawn processes; give them room without hiding hangs for ever.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
