import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackendError } from '../../backends/backend.js';
import type { BenchFile } from '../../backends/probe/bench-file.js';
import { ProbeBackend } from '../../backends/probe/probe-backend.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { adminSchema } from '../../wire/bench/bench-schemas.js';
import type { BenchServiceConfig } from '../../server/bench/bench-service.js';
import { startBenchTestApp } from '../support/bench-test-app.js';
import { FakeBench, fakeOpenocdPath, fakeProbeRsPath } from '../fakes/openocd/fake-bench.js';
import { firmwareImage, makeElf } from '../support/make-elf.js';
import { benchClient } from './every-board-bench-client.js';

/**
 * A hung probe tool is stopped by its own bench-file timeout (exit status
 * and output in the job's reason, counted for quarantine), not by the dispatcher's job deadline;
 * and when a deadline does stop a probe job, that counts as an infrastructure failure too.
 */
const ADMIN = 'deadline-admin';
const f4 = loadBoardCatalog().find((b) => b.id === 'stm32f4-discovery')!;
const f4Elf = makeElf({ segments: [{ paddr: 0x0800_0000, data: new Uint8Array(64).fill(9) }] });

const fake = new FakeBench();
let benchFile: BenchFile;
beforeAll(async () => {
  // The tool's own flash timeout (2.5 s) is far above the dispatcher's flash budget (300 ms).
  benchFile = await fake.start([{ boardId: 'stm32f4-discovery', kind: 'openocd', behaviour: 'hang', timeouts: { flashMs: 2_500, resetMs: 2_000, killGraceMs: 300 } }]);
});
afterAll(() => fake.stop());

const newBackend = (quarantineStore?: ConstructorParameters<typeof ProbeBackend>[0]['quarantineStore']) =>
  new ProbeBackend({ bench: benchFile, clock: systemClock, openocdPath: fakeOpenocdPath, probeRsPath: fakeProbeRsPath, toolEnv: fake.toolEnv, ...(quarantineStore ? { quarantineStore } : {}) });

describe('probe jobs and the job deadline', () => {
  it('states its bench-file timeouts as its job budget', () => {
    expect(newBackend().jobBudgetMs(f4)).toEqual({ flashMs: 5_000 + 2_500 + 300, resetMs: 2_000 + 300 });
  });

  it('a hanging openocd fails the job with the tool timeout (exit status, output) and counts on /admin', { timeout: 60_000 }, async () => {
    const config: Partial<BenchServiceConfig> = {
      clock: systemClock,
      adminToken: ADMIN,
      backend: 'probe',
      dispatcherOptions: { flashTimeoutMs: 300, runMsPerUartSecond: 1_000, marginMs: 300 },
      backends: ({ clock, quarantineStore }) => ({
        probe: new ProbeBackend({ bench: benchFile, clock, openocdPath: fakeOpenocdPath, toolEnv: fake.toolEnv, quarantineStore }),
      }),
    };
    const app = await startBenchTestApp(config);
    try {
      const api = benchClient(app.url);
      const token = await api.register('deadline-agent');
      const queued = await api.flash(token, { board: 'stm32f4-discovery', uartSeconds: 1 }, f4Elf);
      const job = await api.settled(token, queued.job_id, { timeoutMs: 30_000 });
      expect(job).toMatchObject({ state: 'failed', failure: { kind: 'timeout' } });
      expect(job.failure!.message).toMatch(/^flash on stm32f4-discovery \(\S*openocd .*\) did not finish within 2500 ms and was killed; last output:\n[^]*Info : clock speed/);
      expect(job.failure!.message).not.toMatch(/still waiting for/);
      const admin = adminSchema.parse(await (await app.request('/admin', { headers: { 'x-admin-token': ADMIN } })).json());
      expect(admin.boards.find((b) => b.id === 'stm32f4-discovery')!.health).toMatchObject({ consecutive_failures: 1 });
    } finally {
      await app.close();
    }
  });

  it('a tool stopped by the job deadline counts as an infrastructure failure, and says it was the deadline', { timeout: 30_000 }, async () => {
    const backend = newBackend();
    const device = await backend.open(f4);
    const controller = new AbortController();
    try {
      const flashing = device.flash(firmwareImage(f4Elf), { signal: controller.signal });
      setTimeout(() => controller.abort(new BackendError('timeout', 'job j1 stopped by its deadline: it did not finish within 800 ms')), 400);
      const error = await flashing.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(BackendError);
      expect((error as BackendError).kind).toBe('timeout');
      expect((error as BackendError).message).toMatch(/^flash on stm32f4-discovery .* stopped by the job deadline: job j1 stopped by its deadline/);
    } finally {
      await device.close();
    }
    expect(await backend.health('stm32f4-discovery')).toMatchObject({ consecutiveFailures: 1 });

    // A user's cancellation still does not count.
    const again = await backend.open(f4);
    const cancel = new AbortController();
    try {
      const flashing = again.flash(firmwareImage(f4Elf), { signal: cancel.signal });
      setTimeout(() => cancel.abort(new BackendError('cancelled', 'job j2 cancelled: session ended')), 400);
      await expect(flashing).rejects.toMatchObject({ kind: 'cancelled' });
    } finally {
      await again.close();
    }
    expect(await backend.health('stm32f4-discovery')).toMatchObject({ consecutiveFailures: 1 });
  });
});
