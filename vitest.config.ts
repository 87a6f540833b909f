import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { defineConfig } from 'vitest/config';
import { hostToolSuites, onPath } from './test/host-tool-suites.js';

const isExecutable = (file: string) => {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
};

// Files needing a host program that is missing are left out, loudly, unless CI requires them.
const requireTools = process.env.HILBENCH_REQUIRE_TOOLS === '1';
const leftOut: string[] = [];
for (const [tool, { install, files, installedFile }] of Object.entries(hostToolSuites)) {
  if (requireTools || (installedFile ? existsSync(installedFile) : onPath(tool, process.env.PATH ?? '', isExecutable))) continue;
  leftOut.push(...files);
  console.warn(
    `hilbench: ${tool} is not installed, so ${files.length} test files that need it are left out (${install}; ` +
      'CI installs it and sets HILBENCH_REQUIRE_TOOLS=1 so they always run).',
  );
}

export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    exclude: ['node_modules/**', 'data/**', ...leftOut],
    // Emulator-backed tests spawn processes; give them room without hiding hangs for ever.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
