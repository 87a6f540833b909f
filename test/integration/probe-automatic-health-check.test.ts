import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { BenchFile } from '../../backends/probe/bench-file.js';
import { ProbeBackend } from '../../backends/probe/probe-backend.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { runFirmware } from '../../harness/run-firmware.js';
import { FakeBench, fakeOpenocdPath } from '../fakes/openocd/fake-bench.js';
import { firmwareImage, makeElf } from '../support/make-elf.js';

/**
 * Audit issue 4, item 6, on the stand-in bench: with `healthCheck.retryAfterSeconds` a
 * quarantined board gets its health-check firmware run by itself, again after a failed check,
 * and is back in service once one passes.
 */
const f4 = loadBoardCatalog().find((b) => b.id === 'stm32f4-discovery')!;
const image = firmwareImage(makeElf({ segments: [{ paddr: 0x0800_0000, data: new Uint8Array(64).fill(3) }] }));

const fake = new FakeBench();
let bench: BenchFile;
beforeAll(async () => {
  const healthElf = path.join(fake.dir, 'health-f4.elf');
  writeFileSync(healthElf, image.bytes);
  bench = await fake.start(
    [{ boardId: 'stm32f4-discovery', kind: 'openocd', healthCheck: { elf: healthElf, expect: 'boot sha256=[0-9a-f]{16}', withinSeconds: 5 } }],
    { quarantineAfterFailures: 1 },
  );
  const board = bench.boards['stm32f4-discovery']!;
  bench = { ...bench, boards: { 'stm32f4-discovery': { ...board, healthCheck: { ...board.healthCheck!, retryAfterSeconds: 0.5, maxAutomaticChecks: 4 } } } };
});
afterAll(() => fake.stop());

describe('automatic health check on the stand-in bench', () => {
  it('runs by itself after a quarantine, retries after a failure, and releases the board when it passes', { timeout: 60_000 }, async () => {
    const checks: Array<{ attempt: number; passed: boolean }> = [];
    const backend = new ProbeBackend({
      bench,
      clock: systemClock,
      openocdPath: fakeOpenocdPath,
      toolEnv: fake.toolEnv,
      onAutomaticHealthCheck: (e) => {
        checks.push({ attempt: e.attempt, passed: e.outcome.passed });
        // The board is "repaired" after the first failed check.
        fake.setBehaviour('stm32f4-discovery', 'ok');
      },
    });
    try {
      fake.setBehaviour('stm32f4-discovery', 'verify-fail');
      await expect(runFirmware(backend, f4, image, { clock: systemClock, uartSeconds: 1, maxUartBytes: 4096 })).rejects.toMatchObject({ kind: 'flash-failed' });
      expect((await backend.health('stm32f4-discovery')).quarantine).toBeDefined();
      expect(backend.automaticHealthCheckScheduled('stm32f4-discovery')).toBe(true);
      // Waits for the listener, not for the release: the passing check releases the board a few
      // turns of the loop before the listener hears of it, so a poll of the quarantine alone
      // could end the test (and remove the stand-in's files) while attempt 2 is still reporting.
      await vi.waitFor(() => expect(checks.some((c) => c.passed)).toBe(true), { timeout: 30_000, interval: 50 });
      expect((await backend.health('stm32f4-discovery')).quarantine).toBeUndefined();
      expect(checks).toEqual([
        { attempt: 1, passed: false },
        { attempt: 2, passed: true },
      ]);
      expect(await backend.availability(f4)).toEqual({ available: true });
      expect(fake.invocations('stm32f4-discovery').filter((l) => /program \{/.test(l))).toHaveLength(3);
    } finally {
      backend.close();
    }
  });
});
