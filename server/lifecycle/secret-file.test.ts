import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadOrCreateSecret } from './secret-file.js';

const dataDir = mkdtempSync(join(tmpdir(), 'secret-file-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('loadOrCreateSecret', () => {
  it('a key file is 64 hex characters and is reused, not regenerated', () => {
    const key = loadOrCreateSecret(dataDir, 'relay-server.key');
    expect(readFileSync(join(dataDir, 'relay-server.key'), 'utf8')).toMatch(/^[0-9a-f]{64}\n$/);
    expect(loadOrCreateSecret(dataDir, 'relay-server.key').toString('hex')).toBe(key.toString('hex'));
  });

  it('a new key file is synced, bytes then its directory entry, before it is used', () => {
    const seen: string[] = [];
    const path = join(dataDir, 'relay-node-synced.key');
    const key = loadOrCreateSecret(dataDir, 'relay-node-synced.key', {
      file: () => seen.push(`file holding ${readFileSync(path, 'utf8').trim().length} hex characters`),
      dir: (dir) => seen.push(`dir ${dir === dataDir ? 'data dir' : dir}`),
    });
    expect(seen).toEqual(['file holding 64 hex characters', 'dir data dir']);
    expect(readFileSync(path, 'utf8')).toBe(`${key.toString('hex')}\n`);
    // Read again, nothing written, nothing synced.
    loadOrCreateSecret(dataDir, 'relay-node-synced.key', { file: () => seen.push('again'), dir: () => seen.push('again') });
    expect(seen).toHaveLength(2);
  });
});
