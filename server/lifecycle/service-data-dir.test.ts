import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClock } from '@sinonjs/fake-timers';
import { afterAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { picoTestElf } from '../../test/support/make-elf.js';
import { startBenchTestApp } from '../../test/support/bench-test-app.js';
import { memoryLogger } from '../http/logger.js';
import { createRelayService } from '../relay/relay-service.js';
import { DataDirInUseError } from './data-dir-lock.js';

// The services on their data directories: one server each (decision 0221), owner-only (0222).
const scratch = mkdtempSync(path.join(tmpdir(), 'service-data-dir-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let made = 0;
const freshDir = () => path.join(scratch, `d${made++}`);
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 0, 1)));

/** Every folder and file under `root` that group or others can access, with its mode. */
function openToOthers(root: string): string[] {
  const found: string[] = [];
  const visit = (p: string) => {
    const stat = lstatSync(p);
    if ((stat.mode & 0o077) !== 0) found.push(`${path.relative(root, p) || '.'} ${(stat.mode & 0o777).toString(8)}`);
    if (stat.isDirectory()) for (const name of readdirSync(p)) visit(path.join(p, name));
  };
  visit(root);
  return found;
}

/** Runs `fn` under umask 022, as a service started from a usual shell would be. */
async function withUmask022<T>(fn: () => Promise<T>): Promise<T> {
  const previous = process.umask(0o022);
  try {
    return await fn();
  } finally {
    process.umask(previous);
  }
}

describe('the bench service on its data directory', () => {
  it('refuses a second service on the same directory while the first keeps working, and starts again after close', async () => {
    const dataDir = freshDir();
    const first = await startBenchTestApp({ dataDir });
    const second = startBenchTestApp({ dataDir });
    await expect(second).rejects.toBeInstanceOf(DataDirInUseError);
    await expect(second).rejects.toThrow(`data directory ${dataDir} is in use by another bench service in this same process (pid ${process.pid}), so this bench service did not start`);
    const { token } = await first.register();
    expect((await first.request('/api/v1/boards', { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    const again = await first.restart();
    expect((await again.request('/api/v1/boards')).status).toBe(200);
    await again.close();
  });

  it('keeps the directory, the databases (with -wal and -shm) and firmware blobs owner-only', async () => {
    const dataDir = freshDir();
    const app = await withUmask022(() => startBenchTestApp({ dataDir }));
    try {
      const { token } = await app.register();
      const body = new FormData();
      body.set('board', 'pico');
      body.set('firmware', new Blob([picoTestElf()], { type: 'application/octet-stream' }), 'fw.elf');
      const res = await withUmask022(() => app.request('/api/v1/jobs/flash', { method: 'POST', headers: { authorization: `Bearer ${token}` }, body }));
      expect(res.status).toBe(200);
      expect(readdirSync(path.join(dataDir, 'firmware'))).toHaveLength(1);
      expect(readdirSync(dataDir)).toEqual(expect.arrayContaining(['bench.sqlite', 'bench.sqlite-wal', 'bench.sqlite-shm', 'hilbench.lock']));
      expect(openToOthers(dataDir)).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it('narrows an existing data directory left open to others, and says so', async () => {
    const dataDir = freshDir();
    mkdirSync(path.join(dataDir, 'firmware'), { recursive: true, mode: 0o755 });
    chmodSync(dataDir, 0o755);
    writeFileSync(path.join(dataDir, 'firmware', 'a'.repeat(64)), 'old blob', { mode: 0o644 });
    const app = await startBenchTestApp({ dataDir });
    try {
      expect(openToOthers(dataDir)).toEqual([]);
      expect(app.logger.lines.some((l) => l.startsWith(`warn: bench service: 3 files or folders in ${dataDir} were open to other users; narrowed to owner-only`))).toBe(true);
    } finally {
      await app.close();
    }
  });
});

describe('the relay service on its data directory', () => {
  const relayOn = (dataDir: string) => createRelayService({ clock, dataDir, baseUrl: 'http://relay.test', humanUrl: 'http://relay.test', logger: memoryLogger() });

  it('refuses a second relay on the same directory and starts again after close', async () => {
    const dataDir = freshDir();
    const first = await relayOn(dataDir);
    await expect(relayOn(dataDir)).rejects.toThrow(`data directory ${dataDir} is in use by another relay service in this same process`);
    await first.close();
    const second = await relayOn(dataDir);
    expect(second.nodeId).toBe(first.nodeId);
    await second.close();
  });

  it("keeps keys, the database and the files folder owner-only, and removes a crashed run's partial uploads", async () => {
    const dataDir = freshDir();
    mkdirSync(path.join(dataDir, 'files'), { recursive: true });
    const partial = path.join(dataDir, 'files', 'tmp-0123456789abcdef');
    writeFileSync(partial, 'half an upload');
    const relay = await withUmask022(async () => relayOn(dataDir));
    try {
      expect(readdirSync(path.join(dataDir, 'files'))).toEqual([]);
      expect(readdirSync(dataDir)).toEqual(expect.arrayContaining(['relay.sqlite', 'relay.sqlite-wal', 'relay-server.key', 'relay-node.key', 'files']));
      expect(openToOthers(dataDir)).toEqual([]);
    } finally {
      await relay.close();
    }
  });
});
