import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClock } from '@sinonjs/fake-timers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { type BuildOutcome, distUpToDate, emittedFromExistingSource, ensureDistBuilt, type EnsureDistBuiltOptions, PIDLESS_LOCK_STALE_MS, processAlive, sourcesFingerprint } from './ensure-dist-built.js';

/**
 * The stamp and the lock of compiled-cli.ts on a small tree of its own: the compile step counts its
 * calls instead of running tsc, other processes are a pid the injected `processAlive` answers for,
 * and waits run on a fake clock, so nothing here races the wall clock.
 */

const START_MS = Date.UTC(2026, 10, 29, 12);
const DEAD_PID = 4_000_001;
const LIVE_PID = 4_000_002;
const WAIT_BOUND_MS = 60_000;

let root: string;
let fake: ReturnType<typeof createClock>;
let compiles: number;
/** What the next compile does besides being counted (edit a source, fail). */
let duringCompile: () => void;
/** How the next compile ends (tsc's exit status and report). */
let compileOutcome: BuildOutcome;
let options: EnsureDistBuiltOptions;
const livePids = new Set<number>();

const source = (name: string) => path.join(root, 'src', name);
const lockPid = () => path.join(options.lock, 'pid');
/** Another process's lock: the directory, with a pid file unless `pid` is undefined. */
function lockHeldBy(pid: number | undefined): void {
  mkdirSync(options.lock, { recursive: true });
  if (pid !== undefined) writeFileSync(lockPid(), String(pid));
}
/** Whether `promise` has settled, after letting everything already due run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await fake.tickAsync(0);
  return done;
}

beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), 'hilbench-dist-build-'));
  for (const [file, text] of Object.entries({
    'package.json': '{}',
    'tsconfig.json': '{}',
    'tsconfig.build.json': JSON.stringify({ include: ['src'] }),
    'src/a.ts': 'export const a = 1;\n',
    'src/sub/b.ts': 'export const b = 2;\n',
    'src/a.test.ts': "it('is a test');\n",
  })) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  fake = createClock(START_MS);
  compiles = 0;
  duringCompile = () => {};
  compileOutcome = { exitStatus: 0, report: '' };
  livePids.clear();
  options = {
    root,
    stamp: path.join(root, 'dist', '.tests-built'),
    lock: path.join(root, '.tmp', 'dist-build.lock'),
    compile: () => {
      compiles += 1;
      // The stamp is gone while a build runs, and the lock is this process's.
      expect(existsSync(options.stamp)).toBe(false);
      expect(readFileSync(lockPid(), 'utf8')).toBe(String(options.pid));
      mkdirSync(path.join(root, 'dist'), { recursive: true });
      duringCompile();
      return compileOutcome;
    },
    clock: clockFromFakeTimers(fake),
    waitBoundMs: WAIT_BOUND_MS,
    pid: 1234,
    processAlive: (pid) => livePids.has(pid),
  };
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

describe('the stamp: dist/ is built when its sources differ from those of the last build', () => {
  it('builds where there is no stamp, then not again while nothing changes, and leaves no lock', async () => {
    await ensureDistBuilt(options);
    expect(compiles).toBe(1);
    expect(JSON.parse(readFileSync(options.stamp, 'utf8'))).toEqual({ sources: sourcesFingerprint(root), exitStatus: 0, report: '' });
    await ensureDistBuilt(options);
    expect(compiles).toBe(1);
    expect(existsSync(options.lock)).toBe(false);
  });

  it.each([
    ['a source is edited', () => appendFileSync(source('a.ts'), '// more\n')],
    ['a source in a sub-folder is dated in the future, unchanged', () => utimesSync(source('sub/b.ts'), new Date(START_MS + 86_400_000), new Date(START_MS + 86_400_000))],
    ['a source is deleted', () => rmSync(source('sub/b.ts'))],
    ['a source is added', () => writeFileSync(source('c.ts'), 'export const c = 3;\n')],
    ['the build configuration changes', () => appendFileSync(path.join(root, 'tsconfig.json'), '\n')],
  ])('is stale when %s', async (_what, change) => {
    await ensureDistBuilt(options);
    change();
    expect(distUpToDate(options)).toBe(false);
    await ensureDistBuilt(options);
    expect(compiles).toBe(2);
    expect(distUpToDate(options)).toBe(true);
  });

  it('is stale when the stamp is one an older version wrote (the fingerprint alone)', async () => {
    await ensureDistBuilt(options);
    writeFileSync(options.stamp, sourcesFingerprint(root));
    expect(distUpToDate(options)).toBe(false);
  });

  it("keeps tsc's exit status with the stamp, and gives it to whileLocked in the run that built and in the next", async () => {
    // Errors only with every file emitted (TS2742 on a declaration): the CLI tests run on, the package build fails.
    compileOutcome = { exitStatus: 2, report: "error TS2742: The inferred type of 'x' cannot be named" };
    const seen: BuildOutcome[] = [];
    await ensureDistBuilt({ ...options, whileLocked: (build) => seen.push(build) });
    await ensureDistBuilt({ ...options, whileLocked: (build) => seen.push(build) });
    expect(compiles).toBe(1);
    expect(seen).toEqual([compileOutcome, compileOutcome]);
    appendFileSync(source('a.ts'), '// fixed\n');
    compileOutcome = { exitStatus: 0, report: '' };
    await ensureDistBuilt({ ...options, whileLocked: (build) => seen.push(build) });
    expect(seen[2]).toEqual({ exitStatus: 0, report: '' });
  });

  it('is still fresh when only a test file changes (the build leaves tests out)', async () => {
    await ensureDistBuilt(options);
    appendFileSync(source('a.test.ts'), '// more\n');
    await ensureDistBuilt(options);
    expect(compiles).toBe(1);
  });

  it('stamps the sources as the build started: one saved during the build makes the next run build again', async () => {
    duringCompile = () => appendFileSync(source('a.ts'), '// saved while tsc ran\n');
    await ensureDistBuilt(options);
    expect(distUpToDate(options)).toBe(false);
    duringCompile = () => {};
    await ensureDistBuilt(options);
    expect(compiles).toBe(2);
  });

  it('trusts no half-built dist/: a failed compile leaves no stamp, frees the lock, and the next run builds', async () => {
    await ensureDistBuilt(options);
    appendFileSync(source('a.ts'), '// more\n');
    duringCompile = () => {
      throw new Error('tsc was killed');
    };
    await expect(ensureDistBuilt(options)).rejects.toThrow('tsc was killed');
    expect(existsSync(options.stamp)).toBe(false);
    expect(existsSync(options.lock)).toBe(false);
    duringCompile = () => {};
    await ensureDistBuilt(options);
    expect(compiles).toBe(3);
  });
});

describe('the lock: one process builds, the others wait for it', () => {
  it("takes over a dead holder's lock and builds", async () => {
    lockHeldBy(DEAD_PID);
    const ensured = ensureDistBuilt(options);
    // Without waiting: a dead holder is seen as dead at once.
    expect(await settled(ensured)).toBe(true);
    await ensured;
    expect(compiles).toBe(1);
    expect(existsSync(options.lock)).toBe(false);
    expect(existsSync(`${options.lock}.takeover`)).toBe(false);
  });

  it("waits while a live holder builds, then uses the holder's build without building", async () => {
    livePids.add(LIVE_PID);
    lockHeldBy(LIVE_PID);
    const ensured = ensureDistBuilt(options);
    await fake.tickAsync(5_000);
    expect(await settled(ensured)).toBe(false);
    // The holder finishes: its stamp, then its lock gone.
    mkdirSync(path.dirname(options.stamp), { recursive: true });
    writeFileSync(options.stamp, JSON.stringify({ sources: sourcesFingerprint(root), exitStatus: 0, report: '' }));
    rmSync(options.lock, { recursive: true });
    await fake.tickAsync(1_000);
    expect(await settled(ensured)).toBe(true);
    await ensured;
    expect(compiles).toBe(0);
  });

  it('builds itself when a live holder gives up without a stamp', async () => {
    livePids.add(LIVE_PID);
    lockHeldBy(LIVE_PID);
    const ensured = ensureDistBuilt(options);
    await fake.tickAsync(1_000);
    rmSync(options.lock, { recursive: true });
    await fake.tickAsync(1_000);
    await ensured;
    expect(compiles).toBe(1);
  });

  it('gives up after its bound on a holder that never finishes, naming the lock', async () => {
    livePids.add(LIVE_PID);
    lockHeldBy(LIVE_PID);
    const failed = expect(ensureDistBuilt(options)).rejects.toThrow(`waited ${WAIT_BOUND_MS / 1000} s for another test process to build dist/ (lock ${options.lock}`);
    await fake.tickAsync(WAIT_BOUND_MS + 1_000);
    await failed;
    expect(compiles).toBe(0);
    // Never taken from a live holder.
    expect(readFileSync(lockPid(), 'utf8')).toBe(String(LIVE_PID));
  });

  it('treats a lock without a pid as being taken for a grace, then as left by a taker that died', async () => {
    lockHeldBy(undefined);
    const madeSeconds = (START_MS - 1_000) / 1000;
    utimesSync(options.lock, madeSeconds, madeSeconds);
    const ensured = ensureDistBuilt(options);
    await fake.tickAsync(PIDLESS_LOCK_STALE_MS - 2_000);
    expect(await settled(ensured)).toBe(false);
    expect(compiles).toBe(0);
    await fake.tickAsync(2_000);
    await ensured;
    expect(compiles).toBe(1);
  });

  it('treats a pid file of 0 or garbage as no holder (kill(0) would signal the process group)', async () => {
    for (const pid of ['0', 'not a pid']) {
      mkdirSync(options.lock, { recursive: true });
      writeFileSync(lockPid(), pid);
      rmSync(options.stamp, { force: true });
      await ensureDistBuilt(options);
    }
    expect(compiles).toBe(2);
  });

  it("leaves a lock that is no longer its own (taken over while it built) to its new holder", async () => {
    duringCompile = () => writeFileSync(lockPid(), String(LIVE_PID));
    await ensureDistBuilt(options);
    expect(readFileSync(lockPid(), 'utf8')).toBe(String(LIVE_PID));
  });

  it('runs whileLocked under its own lock, once dist/ is current, even when it was already', async () => {
    await ensureDistBuilt(options);
    const seen: string[] = [];
    await ensureDistBuilt({ ...options, whileLocked: () => seen.push(readFileSync(lockPid(), 'utf8'), String(distUpToDate(options))) });
    expect(seen).toEqual([String(options.pid), 'true']);
    expect(compiles).toBe(1);
    expect(existsSync(options.lock)).toBe(false);
  });
});

describe('emittedFromExistingSource', () => {
  it("keeps a dist/ file whose source exists, index files included, and drops a deleted or renamed source's outputs", () => {
    const dist = path.join(root, 'dist');
    writeFileSync(source('index.ts'), 'export {};\n');
    const kept = (file: string) => emittedFromExistingSource(root, dist, path.join(dist, file));
    for (const file of ['src/a.js', 'src/a.js.map', 'src/a.d.ts', 'src/a.d.ts.map', 'src/sub/b.js', 'src/index.js', 'src/index.d.ts']) expect(kept(file)).toBe(true);
    for (const file of ['src/gone.js', 'src/gone.js.map', 'src/gone.d.ts', 'src/gone.d.ts.map', 'src/sub/index.js', 'old/a.js']) expect(kept(file)).toBe(false);
    // Not an output of a source (tsc emits nothing else; a file put there is left as it is).
    expect(kept('src/notes.json')).toBe(true);
    // A .js source, should a build copy one.
    writeFileSync(source('plain.js'), 'export {};\n');
    expect(kept('src/plain.js')).toBe(true);
  });
});

describe('processAlive', () => {
  it('says this process runs and one that has exited does not', () => {
    expect(processAlive(process.pid)).toBe(true);
    const exited = spawnSync(process.execPath, ['-e', '0']);
    expect(processAlive(exited.pid!)).toBe(false);
  });
});
