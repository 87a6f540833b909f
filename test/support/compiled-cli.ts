import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * The CLI the tests start as a program: the compiled `dist/bin/hilbench.js`, the file users run
 * (package.json `bin`), not the sources through tsx, whose start costs about two and a half times
 * the CPU (decision 0890). Built by the package's own `tsc -p tsconfig.build.json` the first time a test
 * file needs it in a run where a source is newer than the last build (a clean clone has no dist/):
 * one process builds, under a lock, while the other workers wait for it; the next run that finds
 * nothing newer starts at once.
 */

const root = path.resolve(import.meta.dirname, '../..');
const dist = path.join(root, 'dist');
/** Written (its time set to when the build began) once a build this file started has emitted. */
const stamp = path.join(dist, '.tests-built');
/** What the build reads besides the folders tsconfig.build.json includes. */
const buildFiles = ['package.json', 'tsconfig.json', 'tsconfig.build.json'];
/** A directory: mkdir is atomic, so one process at a time holds it (`/.tmp/` is git-ignored). */
const lock = path.join(root, '.tmp', 'dist-build.lock');
/** A loaded 2-core machine took 200 s for a whole build; waiting on another process's is bounded by this. */
const BUILD_WAIT_MS = 15 * 60_000;
const LOCK_POLL_MS = 250;

/** The newest modification time (ms) of what the build compiles: `.ts` sources, tests left out, and its configuration. */
function newestSourceMs(): number {
  const config = JSON.parse(readFileSync(path.join(root, 'tsconfig.build.json'), 'utf8')) as { include: string[] };
  let newest = Math.max(...buildFiles.map((f) => statSync(path.join(root, f)).mtimeMs));
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) newest = Math.max(newest, statSync(full).mtimeMs);
    }
  };
  for (const folder of config.include) walk(path.join(root, folder));
  return newest;
}

const upToDate = () => existsSync(stamp) && statSync(stamp).mtimeMs >= newestSourceMs();

function holderAlive(): boolean {
  try {
    const pid = Number(readFileSync(path.join(lock, 'pid'), 'utf8'));
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // No pid written yet (it is being written): alive. A pid that is gone (ESRCH): dead.
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

function build(): void {
  const startedMs = Date.now();
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  // Incremental: a run after a small change compiles what it touches, not the whole tree again.
  const run = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--incremental', '--tsBuildInfoFile', path.join(dist, '.tsbuildinfo')], {
    cwd: root,
    encoding: 'utf8',
  });
  const cli = path.join(dist, 'bin', 'hilbench.js');
  if (!existsSync(cli)) {
    throw new Error(`building dist/ for the CLI tests (tsc -p tsconfig.build.json, exit ${run.status}) left no dist/bin/hilbench.js:\n${`${run.stdout}${run.stderr}`.slice(-3000)}`);
  }
  // Type errors still emit; the type check of `npm test` reports them, so the tests run on.
  if (run.status !== 0) console.warn(`hilbench tests: tsc -p tsconfig.build.json reported errors (exit ${run.status}); the CLI tests run on what it emitted:\n${run.stdout.slice(-2000)}`);
  chmodSync(cli, 0o755);
  writeFileSync(stamp, `built for the tests by test/support/compiled-cli.ts\n`);
  const began = new Date(startedMs);
  utimesSync(stamp, began, began);
}

/** Builds dist/ unless it is up to date, whichever worker comes first; the others wait. */
async function ensureCompiledCli(): Promise<string> {
  const waitedSinceMs = Date.now();
  mkdirSync(path.dirname(lock), { recursive: true });
  for (;;) {
    if (upToDate()) return path.join(dist, 'bin', 'hilbench.js');
    try {
      mkdirSync(lock);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (!holderAlive()) rmSync(lock, { recursive: true, force: true });
      else if (Date.now() - waitedSinceMs > BUILD_WAIT_MS) {
        throw new Error(`waited ${BUILD_WAIT_MS / 1000} s for another test process to build dist/ (lock ${lock}; remove it if no test runs)`);
      } else await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
      continue;
    }
    try {
      writeFileSync(path.join(lock, 'pid'), String(process.pid));
      // Another process may have built it while this one waited for the lock.
      if (!upToDate()) build();
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
}

/** The `hilbench` CLI as users run it: `dist/bin/hilbench.js`, built first if a source is newer than it. */
export const hilbenchCli: string = await ensureCompiledCli();
