import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { type Clock, sleep } from '../../core/clock.js';

/**
 * The stamp and the lock behind `compiled-cli.ts` (decision 0890): dist/ is built at most once per
 * run, by whichever process takes the lock first, and only when the sources differ from those of
 * the last build. Paths, the compile step, the clock and the liveness of a pid are passed in, so
 * `ensure-dist-built.test.ts` drives every branch on a temporary tree without compiling anything.
 */

/** What the build reads besides the folders tsconfig.build.json includes. */
const buildFiles = ['package.json', 'tsconfig.json', 'tsconfig.build.json'];
/** A lock whose pid file is not there yet is being taken; older than this, its taker died first. */
export const PIDLESS_LOCK_STALE_MS = 10_000;
/** How often a waiter looks at the lock again. */
const LOCK_POLL_MS = 250;

export interface EnsureDistBuiltOptions {
  /** The package: its tsconfig.build.json `include` names the folders the build compiles. */
  root: string;
  /** Written once a build this code started has emitted: the fingerprint of the sources it compiled. */
  stamp: string;
  /** A directory: mkdir is atomic, so one process at a time holds it. */
  lock: string;
  /** Compiles the sources into dist/; throws when what it left cannot be used, and says how the compile ended when it can. */
  compile: () => BuildOutcome;
  /** Host time: the age of a lock without a pid, the bound of the wait, the pause between looks. */
  clock: Clock;
  /** How long to wait for another process's build before failing. */
  waitBoundMs: number;
  /** This process's id, written into the lock while it holds it. */
  pid: number;
  /** Whether the process `pid` still runs (`process.kill(pid, 0)` in a real run). */
  processAlive: (pid: number) => boolean;
  /**
   * Run under the lock once dist/ is current, so no other process rebuilds it meanwhile (a copy of
   * dist/ taken whole), with how the build of that dist/ ended (from the stamp when an earlier run
   * built it); with it the lock is taken even when dist/ is already current.
   */
  whileLocked?: (build: BuildOutcome) => void;
}

/** How a compile that left a usable dist/ ended, kept in the stamp with the sources it compiled. */
export interface BuildOutcome {
  /** tsc's exit status: 0, or 2 when it reported errors and still emitted (a package build that fails). */
  exitStatus: number;
  /** The end of what it reported (empty when it exited 0). */
  report: string;
}

/** The stamp's contents: the fingerprint of the sources compiled, and how the compile ended. */
interface Stamp extends BuildOutcome {
  sources: string;
}

function readStamp(stamp: string): Stamp | null {
  try {
    const parsed = JSON.parse(readFileSync(stamp, 'utf8')) as Partial<Stamp>;
    if (typeof parsed.sources !== 'string' || typeof parsed.exitStatus !== 'number' || typeof parsed.report !== 'string') return null;
    return { sources: parsed.sources, exitStatus: parsed.exitStatus, report: parsed.report };
  } catch {
    // None, or one an older version of this file wrote: dist/ is built again.
    return null;
  }
}

/**
 * What the build compiles, as one string: every `.ts` source of its folders (tests left out) and its
 * configuration, each with its size and modification time. Compared for equality, so an edit, a
 * deleted or renamed source, or a file dated in the future all make dist/ stale.
 */
export function sourcesFingerprint(root: string): string {
  const config = JSON.parse(readFileSync(path.join(root, 'tsconfig.build.json'), 'utf8')) as { include: string[] };
  const files = buildFiles.map((f) => path.join(root, f));
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

/** Whether the last build's stamp names the sources as they are now. */
export function distUpToDate(options: Pick<EnsureDistBuiltOptions, 'root' | 'stamp'>): boolean {
  return existsSync(options.stamp) && readStamp(options.stamp)?.sources === sourcesFingerprint(options.root);
}

type LockOptions = Pick<EnsureDistBuiltOptions, 'lock' | 'clock' | 'processAlive'>;

function holderAlive({ lock, clock, processAlive }: LockOptions): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(path.join(lock, 'pid'), 'utf8'));
  } catch {
    // No pid written yet: being taken, unless the lock is older than a taker needs to write it.
    try {
      return clock.nowMs() - statSync(lock).mtimeMs < PIDLESS_LOCK_STALE_MS;
    } catch {
      return false; // the lock went meanwhile
    }
  }
  // 0 or garbage would make kill() signal this process group: a holder never writes that.
  if (!Number.isInteger(pid) || pid <= 0) return false;
  return processAlive(pid);
}

/**
 * Takes a dead holder's lock away, under a second lock: the holder is looked at again inside it, and
 * no new holder can take the lock while the dead one's is there, so no waiter removes a lock another
 * has just taken. A takeover whose process died inside it is cleared after the same grace.
 */
function dropStaleLock(options: LockOptions): void {
  const takeover = `${options.lock}.takeover`;
  try {
    mkdirSync(takeover);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    try {
      if (options.clock.nowMs() - statSync(takeover).mtimeMs > PIDLESS_LOCK_STALE_MS) rmSync(takeover, { recursive: true, force: true });
    } catch {
      // gone meanwhile
    }
    return;
  }
  try {
    if (existsSync(options.lock) && !holderAlive(options)) rmSync(options.lock, { recursive: true, force: true });
  } finally {
    rmSync(takeover, { recursive: true, force: true });
  }
}

/** Whether the lock is this process's (it is never taken from a live holder; this guards a slow one all the same). */
function holdingLock({ lock, pid }: Pick<EnsureDistBuiltOptions, 'lock' | 'pid'>): boolean {
  try {
    return Number(readFileSync(path.join(lock, 'pid'), 'utf8')) === pid;
  } catch {
    return false;
  }
}

function build(options: EnsureDistBuiltOptions): void {
  // The sources as the build starts: one saved during the build changes the fingerprint, so the next run builds again.
  const sources = sourcesFingerprint(options.root);
  // No stamp while a build runs: a build that dies half-way leaves a dist/ no run trusts.
  rmSync(options.stamp, { force: true });
  const outcome = options.compile();
  writeFileSync(options.stamp, JSON.stringify({ sources, exitStatus: outcome.exitStatus, report: outcome.report } satisfies Stamp));
}

/** Builds dist/ unless it is up to date, whichever process comes first; the others wait for it. */
export async function ensureDistBuilt(options: EnsureDistBuiltOptions): Promise<void> {
  const { lock, clock } = options;
  const waitedSinceMs = clock.nowMs();
  mkdirSync(path.dirname(lock), { recursive: true });
  for (;;) {
    if (!options.whileLocked && distUpToDate(options)) return;
    try {
      mkdirSync(lock);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (!holderAlive(options)) dropStaleLock(options);
      else if (clock.nowMs() - waitedSinceMs > options.waitBoundMs) {
        throw new Error(`waited ${options.waitBoundMs / 1000} s for another test process to build dist/ (lock ${lock}; remove it if no test runs)`);
      } else await sleep(clock, LOCK_POLL_MS);
      continue;
    }
    try {
      // Written aside and renamed in: a waiter never reads a pid file half written (empty reads as no holder).
      const pidAside = `${lock}.pid-${options.pid}`;
      writeFileSync(pidAside, String(options.pid));
      renameSync(pidAside, path.join(lock, 'pid'));
      // Another process may have built it while this one waited for the lock.
      if (!distUpToDate(options)) build(options);
      if (options.whileLocked) {
        const stamp = readStamp(options.stamp);
        // A build whose compile failed left no stamp and threw; one without a stamp here was built by another version of this file.
        options.whileLocked({ exitStatus: stamp?.exitStatus ?? 0, report: stamp?.report ?? '' });
      }
      // Built here (or found built): used as it is, even if a source changed meanwhile (the next run builds again).
      return;
    } finally {
      if (holdingLock(options)) rmSync(lock, { recursive: true, force: true });
    }
  }
}

/**
 * Whether `distFile` (a path inside `distDir`) was emitted from a source that still exists under
 * `root` (dist/ mirrors it: tsconfig.build.json's `rootDir` is the package): `x.js`, `x.js.map`,
 * `x.d.ts` and `x.d.ts.map` from `x.ts` (`x.js` also from itself, for a build that copies `.js`
 * sources). The incremental build never deletes the outputs of a deleted or renamed source; a
 * file of another kind is kept.
 */
export function emittedFromExistingSource(root: string, distDir: string, distFile: string): boolean {
  const relative = path.relative(distDir, distFile);
  const stem = /^(.*?)(\.d\.ts\.map|\.d\.ts|\.js\.map|\.js)$/.exec(relative)?.[1];
  if (stem === undefined) return true;
  return existsSync(path.join(root, `${stem}.ts`)) || existsSync(path.join(root, `${stem}.js`));
}

/** `process.kill(pid, 0)`: true unless no such process runs (EPERM: it runs, as another user). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
