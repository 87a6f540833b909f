import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { hostToolSuites, onPath, postgresSuites } from './test/host-tool-suites.js';

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

// PostgreSQL answers (the local socket, or HILBENCH_TEST_DATABASE_URL), or its files are left out the same way.
const postgresUrl = process.env.HILBENCH_TEST_DATABASE_URL ?? postgresSuites.defaultBaseUrl;
const postgresAnswers = spawnSync('psql', [postgresUrl, '-tAc', 'SELECT 1'], { timeout: 10_000, stdio: 'ignore' }).status === 0;
if (!requireTools && !postgresAnswers) {
  leftOut.push(...postgresSuites.files);
  console.warn(
    `hilbench: PostgreSQL does not answer at ${postgresUrl}, so ${postgresSuites.files.length} test files that need it are left out ` +
      `(${postgresSuites.install}; CI installs it and sets HILBENCH_REQUIRE_TOOLS=1 so they always run).`,
  );
}

export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    // examples/ are projects of their own, run against the packed package (test/package/pack.test.ts).
    // .ci is a link to ci/ (the CI entry point's conventional name): its tests run once, under ci/.
    exclude: ['node_modules/**', '.ci/**', 'data/**', 'dist/**', 'examples/**', ...leftOut],
    // Emulator-backed tests spawn processes; give them room without hiding hangs for ever.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // vitest's default is one worker fewer than the cores: a single worker on CI's two cores, so a
    // run took the sum of every file's time while a core waited on emulators, child processes and
    // PostgreSQL (decision 0750). One worker per core; not more, as the tests that watch an
    // emulator in wall time (QEMU's ticks) must still get the CPU they need. Files are isolated
    // (a process each) on port 0, fresh databases and temporary directories: they share nothing.
    maxWorkers: availableParallelism(),
  },
});
