import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { currentProcess } from './process-identity.js';

/**
 * Per-device scratch folders of the emulator backends (the ELF, QEMU's UART socket), named after
 * the process that made them: `<prefix>-<pid>-<start ticks>-XXXXXX`. A device removes its own on
 * close; a crashed process cannot, and the next server start removes the folders whose named
 * process is dead (server/lifecycle/reap-leftovers.ts). Folders of a live process, another test
 * server's or a `hilbench run`'s, are never touched.
 */
export type ScratchPrefix = 'hbq' | 'hbr';

/** `hbq-1234-567890-aB3xYz`: prefix, owner pid, owner start ticks, mkdtemp's random part. */
export const SCRATCH_DIR_PATTERN = /^(hbq|hbr)-(\d+)-(\d+)-[A-Za-z0-9]{6}$/;

/** Unix socket paths are limited to 107 bytes: a longer temp dir is replaced by /tmp. */
const MAX_PARENT_LENGTH = 60;

/** Where scratch folders go by default: the OS temp dir, or /tmp when that path is too long for a socket. */
export function defaultScratchParent(): string {
  const tmp = os.tmpdir();
  return tmp.length > MAX_PARENT_LENGTH ? '/tmp' : tmp;
}

/** Creates an owner-only (mkdtemp: 0700) scratch folder under `parent`, tagged with this process. */
export function makeScratchDir(prefix: ScratchPrefix, parent: string = defaultScratchParent()): string {
  const owner = currentProcess();
  // Off Linux the start time is unknown (0); the reaper does not act there (it cannot tell who is alive).
  const tag = owner ? `${owner.pid}-${owner.startTicks}` : `${process.pid}-0`;
  return mkdtempSync(path.join(parent, `${prefix}-${tag}-`));
}
