import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * The CLI the tests start as a program: the compiled `dist/bin/hilbench.js`, the file users run
 * (package.json `bin`), not the sources through tsx, whose start costs about two and a half times
 * the CPU (decision 0890). Built by the package's own `tsc -p tsconfig.build.json` the first time a test
 * file needs it in a run where the sources differ from those of the last build (a clean clone has no dist/):
 * one process builds, under a lock, while the other workers wait for it; the next run that finds
 * the same sources starts at once.
 */

const root = path.resolve(import.meta.dirname, '../..');
const dist = path.join(root, 'dist');
/** Written once a build this file started has emitted: the fingerprint of the sources it compiled. */
const stamp = path.join(dist, '.tests-built');
/** What the build reads besides the folders tsconfig.build.json includes. */
const buildFiles = ['package.json', 'tsconfig.json', 'tsconfig.build.json'];
/** A directory: mkdir is atomic, so one process at a time holds it (`/.tmp/` is git-ignored). */
const lock = path.join(root, '.tmp', 'dist-build.lock');
/** A loaded 2-core machine took 200 s for a whole build; waiting on another process's is bounded by this. */
const BUILD_WAIT_MS = 15 * 60_000;
const LOCK_POLL_MS = 250;

/**
 * What the build compiles, as one string: every `.ts` source of its folders (tests left out) and its
 * configuration, each with its size and modification time. Compared for equality, so an edit, a
 * deleted or renamed source, or a file dated in the future all make dist/ stale.
 */
function sourcesFingerprint(): string {
  const config = JSON.parse(readFileSync(path.join(root, 'tsconfig.build.json'), 'utf8')) as { include: string[] };
  const files = [...buildFiles.map((f) => path.join(root, f))];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) files.push(full);
    }
  };
  for (const folder of config.include) walk(path.join(root, folder));
  const hash = createHash('sha256');
  for (const file of files.sort()) {
    const { size, mtimeMs } = statSync(file);
    hash.update(`${path.relative(root, file)}\0${size}\0${mtimeMs}\n`);
  }
  return hash.digest('hex');
}

const upToDate = () => existsSync(stamp) && readFileSync(stamp, 'utf8') === sourcesFingerprint();

/** A lock whose pid file is not there yet is being taken; older than this, its taker died first. */
const PIDLESS_LOCK_STALE_MS = 10_000;

function holderAlive(): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(path.join(lock, 'pid'), 'utf8'));
  } catch {
    // No pid written yet: being taken, unless the lock is older than a taker needs to write it.
    try {
      return Date.now() - statSync(lock).mtimeMs < PIDLESS_LOCK_STALE_MS;
    } catch {
      return false; // the lock went meanwhile
    }
  }
  // 0 or garbage would make kill() signal this process group: a holder never writes that.
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** Held (mkdir, atomic) while a waiter takes a dead holder's lock away. */
const takeover = `${lock}.takeover`;

/**
 * Takes a dead holder's lock away, under a second lock: the holder is looked at again inside it, and
 * no new holder can take the lock while the dead one's is there, so no waiter removes a lock another
 * has just taken. A takeover whose process died inside it is cleared after the same grace.
 */
function dropStaleLock(): void {
  try {
    mkdirSync(takeover);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    try {
      if (Date.now() - statSync(takeover).mtimeMs > PIDLESS_LOCK_STALE_MS) rmSync(takeover, { recursive: true, force: true });
    } catch {
      // gone meanwhile
    }
    return;
  }
  try {
    if (existsSync(lock) && !holderAlive()) rmSync(lock, { recursive: true, force: true });
  } finally {
    rmSync(takeover, { recursive: true, force: true });
  }
}

/** Whether the lock is this process's (it is never taken from a live holder; this guards a slow one all the same). */
function holdingLock(): boolean {
  try {
    return Number(readFileSync(path.join(lock, 'pid'), 'utf8')) === process.pid;
  } catch {
    return false;
  }
}

function build(): void {
  // The sources as the build starts: one saved during the build changes the fingerprint, so the next run builds again.
  const sources = sourcesFingerprint();
  // No stamp while a build runs: a build that dies half-way leaves a dist/ no run trusts.
  rmSync(stamp, { force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  // Incremental: a run after a small change compiles what it touches, not the whole tree again.
  const run = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--incremental', '--tsBuildInfoFile', path.join(dist, '.tsbuildinfo')], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const cli = path.join(dist, 'bin', 'hilbench.js');
  // tsc exits 0, or 2 when it found type errors and still emitted; anything else (a signal, no
  // memory, a crash) may have left dist/ half written.
  if (run.error || (run.status !== 0 && run.status !== 2) || !existsSync(cli)) {
    const why = run.error ? run.error.message : `exit ${run.status}${run.signal ? `, signal ${run.signal}` : ''}`;
    throw new Error(`building dist/ for the CLI tests (tsc -p tsconfig.build.json) failed (${why}):\n${`${run.stdout ?? ''}${run.stderr ?? ''}`.slice(-3000)}`);
  }
  // Type errors still emit; the type check of `npm test` reports them, so the tests run on.
  if (run.status !== 0) console.warn(`hilbench tests: tsc -p tsconfig.build.json reported errors (exit ${run.status}); the CLI tests run on what it emitted:\n${run.stdout.slice(-2000)}`);
  chmodSync(cli, 0o755);
  writeFileSync(stamp, sources);
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
      if (!holderAlive()) dropStaleLock();
      else if (Date.now() - waitedSinceMs > BUILD_WAIT_MS) {
        throw new Error(`waited ${BUILD_WAIT_MS / 1000} s for another test process to build dist/ (lock ${lock}; remove it if no test runs)`);
      } else await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
      continue;
    }
    try {
      // Written aside and renamed in: a waiter never reads a pid file half written (empty reads as no holder).
      const pidAside = `${lock}.pid-${process.pid}`;
      writeFileSync(pidAside, String(process.pid));
      renameSync(pidAside, path.join(lock, 'pid'));
      // Another process may have built it while this one waited for the lock.
      if (!upToDate()) build();
      // Built here (or found built): used as it is, even if a source changed meanwhile (the next run builds again).
      return path.join(dist, 'bin', 'hilbench.js');
    } finally {
      if (holdingLock()) rmSync(lock, { recursive: true, force: true });
    }
  }
}

/** The `hilbench` CLI as users run it: `dist/bin/hilbench.js`, built first if its sources changed since. */
export const hilbenchCli: string = await ensureCompiledCli();
