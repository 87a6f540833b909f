import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type FileSyncsSync, createFileDurably } from './durable-files.js';

/**
 * Reads (or creates, mode 0600) a 32-byte secret kept as hex in `dataDir/fileName`.
 * Used for the server HMAC key; losing it revokes every human credential at once. `syncs`: tests.
 */
export function loadOrCreateSecret(dataDir: string, fileName: string, syncs?: FileSyncsSync): Buffer {
  const path = join(dataDir, fileName);
  if (existsSync(path)) {
    const hex = readFileSync(path, 'utf8').trim();
    if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error(`${path} is not 64 hex characters; refusing to start with a damaged key`);
    return Buffer.from(hex, 'hex');
  }
  const key = randomBytes(32);
  // Synced before anyone gets a credential made with it (decision 0480: nothing answered before it is on disk).
  createFileDurably(path, key.toString('hex') + '\n', { mode: 0o600, ...(syncs ? { syncs } : {}) });
  chmodSync(path, 0o600);
  return key;
}
