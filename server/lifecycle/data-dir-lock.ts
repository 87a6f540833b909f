import Database from 'better-sqlite3';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { currentProcess, isProcessAlive, type ProcessIdentity } from '../../backends/process/process-identity.js';
import { createOwnerOnlyFile } from './private-files.js';

/**
 * One server per data directory (decision 0221). Two services on one directory would both
 * "recover" the other's running jobs as interrupted and race on every row, so the second start
 * is refused, naming the directory, the other process and what to do.
 *
 * The lock is a kernel lock: an exclusive SQLite lock (POSIX fcntl, through better-sqlite3,
 * which we ship anyway) on `<dir>/hilbench.lock`, held by an open transaction for as long as the
 * service runs. The kernel drops it when the process dies, however it dies, so a crash never
 * blocks the restart and no stale-lock guessing is needed; taking it is one atomic step, so two
 * simultaneous starts cannot both win. SQLite also refuses a second lock from the same process
 * (a second service in one test process). `<dir>/hilbench.pid` beside it only says who holds it,
 * for the refusal message; it is never what decides.
 */
export const LOCK_FILE = 'hilbench.lock';
export const OWNER_FILE = 'hilbench.pid';

export interface DataDirLock {
  readonly dir: string;
  /** Releases the lock (idempotent); the next start on `dir` may proceed. */
  release(): void;
}

/** The refusal: another live process (or service in this process) holds the data directory. */
export class DataDirInUseError extends Error {
  constructor(
    readonly dir: string,
    readonly holderPid: number | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'DataDirInUseError';
  }
}

interface OwnerNote extends ProcessIdentity {
  service: string;
}

/**
 * Takes the lock on `dir` (which must exist) for `service` ("bench service", "relay service").
 * Throws `DataDirInUseError` when it is held.
 */
export function lockDataDir(dir: string, service: string): DataDirLock {
  const lockFile = path.join(dir, LOCK_FILE);
  createOwnerOnlyFile(lockFile);
  // timeout 0: a held lock is an answer now, not something to wait for.
  const db = new Database(lockFile, { timeout: 0 });
  try {
    // No journal: nothing is ever written; the transaction exists only to hold the lock.
    db.pragma('journal_mode = OFF');
    db.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    db.close();
    if ((err as { code?: string }).code === 'SQLITE_BUSY') throw inUse(dir, service);
    throw err;
  }
  const ownerFile = path.join(dir, OWNER_FILE);
  const me = currentProcess() ?? { pid: process.pid, startTicks: 0 };
  const note: OwnerNote = { ...me, service };
  writeFileSync(ownerFile, JSON.stringify(note) + '\n', { mode: 0o600 });
  let released = false;
  return {
    dir,
    release: () => {
      if (released) return;
      released = true;
      // The note first, while we still hold the lock: a new owner may already be writing its own after.
      rmSync(ownerFile, { force: true });
      db.close();
    },
  };
}

function inUse(dir: string, service: string): DataDirInUseError {
  const owner = readOwnerNote(path.join(dir, OWNER_FILE));
  const holder =
    owner === undefined
      ? 'another process (it has not written its pid yet)'
      : owner.pid === process.pid
        ? `another ${owner.service} in this same process (pid ${owner.pid})`
        : `the ${owner.service} of hilbench process ${owner.pid}${describeCommand(owner)}`;
  const advice =
    owner === undefined
      ? `Stop the other server first, or give this ${service} another data directory (--data-dir).`
      : owner.pid === process.pid
        ? `Close that service first, or give this ${service} another data directory.`
        : `Stop that process first (kill ${owner.pid}), or give this ${service} another data directory (--data-dir).`;
  return new DataDirInUseError(
    dir,
    owner?.pid,
    `data directory ${dir} is in use by ${holder}, so this ${service} did not start: two servers on one data directory would corrupt each other's jobs. ${advice}`,
  );
}

function readOwnerNote(file: string): OwnerNote | undefined {
  try {
    const value = JSON.parse(readFileSync(file, 'utf8')) as Partial<OwnerNote>;
    if (!Number.isSafeInteger(value.pid) || typeof value.service !== 'string') return undefined;
    return { pid: value.pid as number, startTicks: Number(value.startTicks), service: value.service };
  } catch {
    return undefined;
  }
}

/** ` (node bin/hilbench.js serve ...)` from /proc when the holder still runs there, else "". */
function describeCommand(owner: OwnerNote): string {
  if (!isProcessAlive(owner)) return '';
  try {
    const command = readFileSync(`/proc/${owner.pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ').replace(/\s+/g, ' ');
    return command ? ` (${command.length > 200 ? `${command.slice(0, 200)}...` : command})` : '';
  } catch {
    return '';
  }
}
