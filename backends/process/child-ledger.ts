import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { currentProcess, type ProcessIdentity } from './process-identity.js';

/**
 * The ledger of tools we spawned (QEMU, Renode, openocd, probe-rs), kept as one small file per
 * live child in every registered ledger folder (the bench service registers `<data dir>/children`
 * while it runs). A child's file is written when it is spawned and removed when it exits, so after
 * a crash (kill -9, power loss) the files left name exactly the children that may still run: the
 * next start reaps those whose owner is dead and whose pid still has the recorded start time.
 *
 * Process-wide on purpose: every spawn goes through `EmulatorProcess`, whichever backend or
 * harness made it, and a child belongs to the Node process (what dies in a crash), not to one
 * service object. Several services in one process (tests) each get every child; a record whose
 * owner is alive is never acted on.
 */
export interface ChildRecord {
  /** The spawned child: pid and start time (the setpriv wrapper execs in place, so same pid). */
  child: ProcessIdentity;
  /** The process that spawned it; leftovers are reaped only once it is dead. */
  owner: ProcessIdentity;
  /** For the log: what was run. */
  command: string;
}

const ledgerDirs = new Map<string, number>();

/** Records children spawned from now on in `dir` (created owner-only); returns the undo. */
export function registerChildLedger(dir: string): () => void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  ledgerDirs.set(dir, (ledgerDirs.get(dir) ?? 0) + 1);
  let done = false;
  return () => {
    if (done) return;
    done = true;
    const count = (ledgerDirs.get(dir) ?? 1) - 1;
    if (count > 0) ledgerDirs.set(dir, count);
    else ledgerDirs.delete(dir);
  };
}

/** Writes `child` to every registered ledger; returns the function that forgets it once it has exited. */
export function recordChild(child: ProcessIdentity, command: string): () => void {
  const owner = currentProcess();
  if (!owner || ledgerDirs.size === 0) return () => undefined;
  const record: ChildRecord = { child, owner, command };
  const files: string[] = [];
  for (const dir of ledgerDirs.keys()) {
    const file = path.join(dir, recordFileName(child));
    try {
      writeFileSync(file, JSON.stringify(record) + '\n', { mode: 0o600 });
      files.push(file);
    } catch {
      // A ledger folder removed under us (a test's temp dir): nothing to reap there later either.
    }
  }
  return () => {
    for (const file of files) rmSync(file, { force: true });
  };
}

/** The records in `dir`, with their files; unreadable or foreign files are skipped. */
export function readChildLedger(dir: string): { file: string; record: ChildRecord }[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const records: { file: string; record: ChildRecord }[] = [];
  for (const name of names) {
    if (!/^\d+-\d+\.json$/.test(name)) continue;
    const file = path.join(dir, name);
    try {
      const record = parseChildRecord(JSON.parse(readFileSync(file, 'utf8')));
      if (record) records.push({ file, record });
    } catch {
      // Half-written by a crash mid-write: the child it named was spawned a moment before the crash,
      // so pdeathsig (where available) got it; there is nothing safe to act on here.
    }
  }
  return records;
}

function recordFileName(child: ProcessIdentity): string {
  return `${child.pid}-${child.startTicks}.json`;
}

function parseChildRecord(value: unknown): ChildRecord | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { child, owner, command } = value as Record<string, unknown>;
  const identity = (v: unknown): ProcessIdentity | undefined => {
    if (typeof v !== 'object' || v === null) return undefined;
    const { pid, startTicks } = v as Record<string, unknown>;
    return Number.isSafeInteger(pid) && Number.isSafeInteger(startTicks) && (pid as number) > 1 ? { pid: pid as number, startTicks: startTicks as number } : undefined;
  };
  const c = identity(child);
  const o = identity(owner);
  return c && o && typeof command === 'string' ? { child: c, owner: o, command } : undefined;
}
