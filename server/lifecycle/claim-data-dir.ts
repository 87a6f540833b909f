import { mkdirSync } from 'node:fs';
import type { Logger } from '../http/logger.js';
import { type DataDirLock, lockDataDir } from './data-dir-lock.js';
import { PRIVATE_DIR_MODE, tightenTree } from './private-files.js';

/**
 * The first thing a service does with its data directory: create it owner-only, take its lock
 * (refusing when another server holds it), then narrow whatever an earlier run left readable by
 * others. Everything after this runs as the directory's only user, so it may clean up freely.
 */
export function claimDataDir(dir: string, options: { service: string; logger: Logger }): DataDirLock {
  // An existing directory is narrowed below, with the rest, so the warning counts it too.
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const lock = lockDataDir(dir, options.service);
  try {
    const narrowed = tightenTree(dir);
    if (narrowed.length > 0) {
      const shown = narrowed.slice(0, 5).join(', ') + (narrowed.length > 5 ? `, and ${narrowed.length - 5} more` : '');
      options.logger.warn(`${options.service}: ${narrowed.length} files or folders in ${dir} were open to other users; narrowed to owner-only (0700/0600): ${shown}`);
    }
  } catch (err) {
    lock.release();
    throw err;
  }
  return lock;
}
