import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { foregroundClock } from '../../core/clock.js';
import { type BuildOutcome, emittedFromExistingSource, ensureDistBuilt, type EnsureDistBuiltOptions, processAlive } from './ensure-dist-built.js';

/**
 * The CLI the tests start as a program: the compiled `dist/bin/hilbench.js`, the file users run
 * (package.json `bin`), not the sources through tsx, whose start costs about two and a half times
 * the CPU (decision 0890). Built by the package's own `tsc -p tsconfig.build.json` the first time a test
 * file needs it in a run where the sources differ from those of the last build (a clean clone has no dist/):
 * one process builds, under a lock, while the other workers wait for it; the next run that finds
 * the same sources starts at once. The stamp and the lock are `ensure-dist-built.ts`'s.
 */

const root = path.resolve(import.meta.dirname, '../..');
const dist = path.join(root, 'dist');
const cli = path.join(dist, 'bin', 'hilbench.js');
/** The fingerprint of the sources the last build compiled (`ensure-dist-built.ts`). */
const stamp = path.join(dist, '.tests-built');
/** tsc's build info: what makes the next build incremental. */
const buildInfo = path.join(dist, '.tsbuildinfo');

/** tsc of the package's build, incremental: a run after a small change compiles what it touches, not the whole tree again. */
function compile(): BuildOutcome {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const run = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--incremental', '--tsBuildInfoFile', buildInfo], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  // tsc exits 0, or 2 when it found type errors and still emitted; anything else (a signal, no
  // memory, a crash) may have left dist/ half written.
  if (run.error || (run.status !== 0 && run.status !== 2) || !existsSync(cli)) {
    const why = run.error ? run.error.message : `exit ${run.status}${run.signal ? `, signal ${run.signal}` : ''}`;
    throw new Error(`building dist/ for the CLI tests (tsc -p tsconfig.build.json) failed (${why}):\n${`${run.stdout ?? ''}${run.stderr ?? ''}`.slice(-3000)}`);
  }
  // Type errors still emit; the type check of `npm test` reports them, so the tests run on.
  if (run.status !== 0) console.warn(`hilbench tests: tsc -p tsconfig.build.json reported errors (exit ${run.status}); the CLI tests run on what it emitted:\n${run.stdout.slice(-2000)}`);
  chmodSync(cli, 0o755);
  // Kept with the stamp: the package's build (`copyCompiledDist`) fails on it, in this run and the next.
  return { exitStatus: run.status, report: run.status === 0 ? '' : `${run.stdout}${run.stderr}`.slice(-3000) };
}

const options: EnsureDistBuiltOptions = {
  root,
  stamp,
  // `/.tmp/` is git-ignored.
  lock: path.join(root, '.tmp', 'dist-build.lock'),
  compile,
  clock: foregroundClock,
  // A loaded 2-core machine took 200 s for a whole build; waiting on another process's is bounded by this.
  waitBoundMs: 15 * 60_000,
  pid: process.pid,
  processAlive,
};

/**
 * Copies what `tsc -p tsconfig.build.json` emits into `destination` (dist/ without this file's stamp
 * and build info, and without the outputs of sources deleted or renamed since they were emitted),
 * under the build lock, so no worker rebuilds dist/ while it is copied: how pack.test.ts packs the
 * tests' build instead of compiling a second time. Throws when that build's tsc reported errors:
 * the package's build (`npm run build`) fails then, though tsc emitted.
 */
export async function copyCompiledDist(destination: string): Promise<void> {
  await ensureDistBuilt({
    ...options,
    whileLocked: (build) => {
      if (build.exitStatus !== 0) throw new Error(`tsc -p tsconfig.build.json exited ${build.exitStatus}, so the package's build fails (it emitted all the same):\n${build.report}`);
      cpSync(dist, destination, { recursive: true, filter: (from) => from !== stamp && from !== buildInfo && (statSync(from).isDirectory() || emittedFromExistingSource(root, dist, from)) });
    },
  });
}

await ensureDistBuilt(options);

/** The `hilbench` CLI as users run it: `dist/bin/hilbench.js`, built first if its sources changed since. */
export const hilbenchCli: string = cli;
