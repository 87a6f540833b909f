import { open } from 'node:fs/promises';

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
