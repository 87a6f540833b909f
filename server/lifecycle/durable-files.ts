import { closeSync, fdatasyncSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * How a file written aside becomes durable in place: its bytes synced before it is renamed, and
 * the rename synced through its directory after. Without both, a power cut after the database
 * commit that names the file could leave the name pointing at nothing, or at an empty file
 * (decision 0480: nothing is answered before it is on disk). Injectable so tests can see the order.
 */
export interface FileSyncs {
  /** fdatasync of the file at `path`. */
  file(path: string): Promise<void>;
  /** fsync of the directory at `path` (makes a rename or a new name in it durable). */
  dir(path: string): Promise<void>;
}

export const fileSyncs: FileSyncs = {
  file: async (path) => {
    const handle = await open(path, 'r+');
    try {
      await handle.datasync();
    } finally {
      await handle.close();
    }
  },
  dir: async (path) => {
    const handle = await open(path, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  },
};

/** `FileSyncs` for start-up code that is synchronous (the relay's key files): by descriptor and directory path. */
export interface FileSyncsSync {
  /** fdatasync of an open file. */
  file(fd: number): void;
  /** fsync of the directory at `path`. */
  dir(path: string): void;
}

export const fileSyncsSync: FileSyncsSync = {
  file: (fd) => fdatasyncSync(fd),
  dir: (path) => {
    const fd = openSync(path, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  },
};

/**
 * Creates `path` (failing if it exists) with `content`, its bytes and its name durable before this
 * returns: a key the relay answers with (credentials, signatures by its node id) must not vanish,
 * or come back empty, after a power cut.
 */
export function createFileDurably(path: string, content: string, options: { mode: number; syncs?: FileSyncsSync }): void {
  const syncs = options.syncs ?? fileSyncsSync;
  const fd = openSync(path, 'wx', options.mode);
  try {
    writeSync(fd, content);
    syncs.file(fd);
  } finally {
    closeSync(fd);
  }
  syncs.dir(dirname(path));
}
