import { lstatSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { readChildLedger } from '../../backends/process/child-ledger.js';
import { currentProcess, isProcessAlive } from '../../backends/process/process-identity.js';
import { defaultScratchParent, SCRATCH_DIR_PATTERN } from '../../backends/process/scratch-dir.js';

/**
 * What a crashed server left, removed by the next start under the data-dir lock (decision 0223):
 * emulator and probe-tool processes named in the child ledger whose owner is dead (the kernel's
 * parent-death signal covers Linux with setpriv; this covers the rest, and the moment between
 * fork and prctl), the scratch folders of dead processes, and half-written files.
 */
export interface ReapedLeftovers {
  /** Children killed: pid and command, for the log. */
  killed: { pid: number; command: string }[];
  /** Scratch folders removed. */
  scratchDirs: string[];
  /** Partial files removed (relay uploads, firmware blobs). */
  partialFiles: string[];
}

/** The child ledger's folder in a bench data dir. */
export function childLedgerDir(dataDir: string): string {
  return path.join(dataDir, 'children');
}

/**
 * Kills the leftover children recorded in `ledgerDir` and forgets every record whose owner is
 * dead. A child is killed only when its pid still has the recorded start time: a pid reused by an
 * unrelated process since the crash is never signalled. Off Linux (no /proc) nothing is done.
 */
export function reapLeftoverChildren(ledgerDir: string): ReapedLeftovers['killed'] {
  if (!currentProcess()) return [];
  const killed: ReapedLeftovers['killed'] = [];
  for (const { file, record } of readChildLedger(ledgerDir)) {
    if (isProcessAlive(record.owner)) continue; // a live server's child (another service in a live process)
    if (isProcessAlive(record.child)) {
      try {
        process.kill(record.child.pid, 'SIGKILL');
        killed.push({ pid: record.child.pid, command: record.command });
      } catch (err) {
        // ESRCH: it exited between the check and the kill; EPERM: not ours to kill (cannot happen
        // for our own children, but then there is nothing we may do).
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH' && (err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
      }
    }
    rmSync(file, { force: true });
  }
  return killed;
}

/**
 * Removes the emulator scratch folders (`hbq-<pid>-<start>-*`, `hbr-...`) in `parents` whose
 * owning process is dead. Folders of live processes, another test server's for one, stay.
 */
export function removeDeadScratchDirs(parents: readonly string[] = [defaultScratchParent()]): string[] {
  if (!currentProcess()) return [];
  const uid = process.getuid?.();
  const removed: string[] = [];
  for (const parent of new Set(parents)) {
    let names: string[];
    try {
      names = readdirSync(parent);
    } catch {
      continue;
    }
    for (const name of names) {
      const match = SCRATCH_DIR_PATTERN.exec(name);
      if (!match) continue;
      const owner = { pid: Number(match[2]), startTicks: Number(match[3]) };
      if (isProcessAlive(owner)) continue;
      const dir = path.join(parent, name);
      try {
        const stat = lstatSync(dir);
        // Only real folders we own: a shared /tmp may hold look-alikes of other users.
        if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid)) continue;
        rmSync(dir, { recursive: true, force: true });
        removed.push(dir);
      } catch {
        // Gone already, or not ours to remove.
      }
    }
  }
  return removed;
}

/** Removes files in `dir` whose names match `pattern` (partial writes a crash left); returns them. */
export function removePartialFiles(dir: string, pattern: RegExp): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!pattern.test(name)) continue;
    const file = path.join(dir, name);
    rmSync(file, { force: true });
    removed.push(file);
  }
  return removed;
}

/** Relay uploads in progress are `files/tmp-<16 hex>` (server/relay/domain/file-store.ts). */
export const PARTIAL_UPLOAD_PATTERN = /^tmp-[0-9a-f]{16}$/;
/** Firmware blobs being written are `firmware/.<sha256>.<12 hex>.tmp` (server/storage/bench/firmware-blob-store.ts). */
export const PARTIAL_BLOB_PATTERN = /^\.[0-9a-f]{64}\.[0-9a-f]{12}\.tmp$/;
