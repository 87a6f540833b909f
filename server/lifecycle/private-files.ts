import { chmodSync, closeSync, lstatSync, mkdirSync, openSync, readdirSync } from 'node:fs';
import path from 'node:path';

/**
 * Data directories hold e-mail addresses, phone numbers, agent token hashes, the CSRF secret and
 * the relay keys: owner-only, directories 0700 and files 0600 (decision 0222). What we create is
 * created so; what an older version (or a hand-made copy) left wider is tightened at start and
 * logged, rather than refused: the operator asked for this directory, and a refusal would only
 * make them run chmod themselves.
 */
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Creates `dir` (and missing parents) 0700; an existing `dir` wider than that is narrowed. */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  narrow(dir, PRIVATE_DIR_MODE);
}

/** Creates `file` empty with mode 0600 when missing; narrows an existing one. */
export function createOwnerOnlyFile(file: string): void {
  closeSync(openSync(file, 'a', PRIVATE_FILE_MODE));
  narrow(file, PRIVATE_FILE_MODE);
}

/**
 * Prepares a SQLite database file before it is opened: the file (created 0600 when missing) and
 * any journal, WAL and shared-memory files left beside it. SQLite creates `-wal`, `-shm` and
 * `-journal` with the main file's permissions, so a 0600 database keeps them 0600 from then on.
 * `:memory:` and URI names are left alone.
 */
export function prepareOwnerOnlyDatabase(file: string): void {
  if (file === '' || file === ':memory:' || file.startsWith('file:')) return;
  createOwnerOnlyFile(file);
  for (const suffix of ['-wal', '-shm', '-journal']) {
    try {
      narrow(file + suffix, PRIVATE_FILE_MODE);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}

/**
 * Narrows every directory under `root` (itself included) to 0700 and every file to 0600 where
 * group or others had any access. Symbolic links are not followed. Returns the paths changed.
 */
export function tightenTree(root: string): string[] {
  const changed: string[] = [];
  const visit = (p: string) => {
    let stat;
    try {
      stat = lstatSync(p);
    } catch {
      return; // Removed while we walked: nothing to protect.
    }
    if (stat.isSymbolicLink()) return;
    if (stat.isDirectory()) {
      if (narrow(p, PRIVATE_DIR_MODE, stat.mode)) changed.push(p);
      for (const name of readdirSync(p)) visit(path.join(p, name));
    } else if (stat.isFile()) {
      if (narrow(p, PRIVATE_FILE_MODE, stat.mode)) changed.push(p);
    }
    // Sockets and fifos (none of ours live here) keep their modes.
  };
  visit(root);
  return changed;
}

/** chmods `p` to `mode` when group or others have any bit; returns whether it changed. */
function narrow(p: string, mode: number, current = lstatSync(p).mode): boolean {
  if ((current & 0o077) === 0) return false;
  chmodSync(p, mode);
  return true;
}
