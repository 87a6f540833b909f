import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { removeMadeDataDirs, startBenchTestApp } from './bench-test-app.js';

describe('startBenchTestApp data dir cleanup', () => {
  it('keeps its dir through close and restart, and removes it with the dirs it made', async () => {
    const first = await startBenchTestApp();
    await first.close();
    // Tests edit a closed app's files and restart it on the same dir, so close must not remove it.
    expect(existsSync(first.dataDir)).toBe(true);
    writeFileSync(path.join(first.dataDir, 'marker'), 'x');
    const second = await first.restart();
    expect(second.dataDir).toBe(first.dataDir);
    await second.close();
    expect(existsSync(path.join(second.dataDir, 'marker'))).toBe(true);
    removeMadeDataDirs();
    expect(existsSync(first.dataDir)).toBe(false);
  });

  it('leaves a data dir the caller passed in place', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-harness-test-'));
    try {
      const app = await startBenchTestApp({ dataDir: dir });
      await app.close();
      removeMadeDataDirs();
      expect(existsSync(dir)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
