import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { type FileSyncs, fileSyncs } from '../../lifecycle/durable-files.js';

/** Content-addressed firmware storage: each image stored once, by its SHA-256 (hex). */
export interface FirmwareBlobs {
  /** Stores `bytes` under `sha256` (a no-op when present); durable before it resolves. */
  put(sha256: string, bytes: Uint8Array): Promise<void>;
  /** The stored bytes, or undefined when no blob has this hash. */
  get(sha256: string): Promise<Uint8Array | undefined>;
}

/** Firmware in files, `<dir>/<sha256>`: the embedded default's store (PostgreSQL keeps them in a table). */
export class FirmwareBlobStore implements FirmwareBlobs {
  /** Blobs whose name this process saw synced through the folder: found again, no sync is needed. */
  private readonly durable = new Set<string>();

  constructor(
    private readonly dir: string,
    /** How the bytes and the rename reach the disk; injectable so tests can see the order. */
    private readonly syncs: FileSyncs = fileSyncs,
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /**
   * Stores `bytes` under `sha256`. Written to a temporary file in the same folder, its bytes
   * synced, renamed into place and the rename synced through the folder, all before this resolves:
   * a crash never leaves a half-written blob under a valid name, and a job committed after `put`
   * never names firmware a power cut took back (the job row commits once this resolves), even
   * when the blob was already in place.
   */
  async put(sha256: string, bytes: Uint8Array): Promise<void> {
    const target = this.pathOf(sha256);
    if (await exists(target)) {
      // The name may be another put's whose rename is still being synced (the same firmware sent
      // twice at once, or a put cut short by a crash): this caller's job must not commit before it.
      if (!this.durable.has(sha256)) await this.syncDir(sha256);
      return;
    }
    const temp = path.join(this.dir, `.${sha256}.${randomBytes(6).toString('hex')}.tmp`);
    try {
      // Owner-only, like everything in the data dir (decision 0222).
      await writeFile(temp, bytes, { mode: 0o600 });
      await this.syncs.file(temp);
      await rename(temp, target);
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
    await this.syncDir(sha256);
  }

  private async syncDir(sha256: string): Promise<void> {
    await this.syncs.dir(this.dir);
    this.durable.add(sha256);
  }

  /** The stored bytes, or undefined when no blob has this hash. */
  async get(sha256: string): Promise<Uint8Array | undefined> {
    try {
      return new Uint8Array(await readFile(this.pathOf(sha256)));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  private pathOf(sha256: string): string {
    // The hash comes from our own hashing, but never let a malformed one name another path.
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw new Error(`not a SHA-256 hex digest: ${JSON.stringify(sha256)}`);
    return path.join(this.dir, sha256);
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}
