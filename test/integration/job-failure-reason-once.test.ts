import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchFile } from '../../backends/probe/bench-file.js';
import { ProbeBackend } from '../../backends/probe/probe-backend.js';
import { systemClock } from '../../core/clock.js';
import { startBenchTestApp } from '../support/bench-test-app.js';
import type { BenchServiceConfig } from '../../server/bench/bench-service.js';
import { FakeBench, fakeOpenocdPath, fakeProbeRsPath } from '../fakes/openocd/fake-bench.js';
import { makeElf } from '../support/make-elf.js';
import { benchClient } from './every-board-bench-client.js';

/**
 * A failed job's reason carries the backend's exit code and output tail exactly once, whether the
 * backend only sets them as fields (the mock) or already quotes them in its message (the probe).
 */
const occurrences = (text: string, part: string) => text.split(part).length - 1;

describe('job failure reason over HTTP', () => {
  it('mock flash-fail: the message, then the exit code and output once each', async () => {
    const app = await startBenchTestApp();
    try {
      const api = benchClient(app.url);
      const token = await api.register('mock-agent');
      const elf = makeElf({
        segments: [{ paddr: 0x1000_0000, data: new Uint8Array(64) }],
        sections: [{ name: '.hilbench.mock', data: new TextEncoder().encode('fault=flash-fail') }],
      });
      const queued = await api.flash(token, { board: 'pico', uartSeconds: 0.2 }, elf);
      await app.idle();
      const job = await api.job(token, queued.job_id);
      expect(job.failure).toEqual({
        kind: 'flash-failed',
        message: 'mock flash failed (injected fault flash-fail); exit code 1; output: ** Programming Failed ** (mock)',
      });
    } finally {
      await app.close();
    }
  });

  describe('probe on the stand-in bench', () => {
    const fake = new FakeBench();
    let benchFile: BenchFile;
    beforeAll(async () => {
      benchFile = await fake.start([{ boardId: 'stm32f4-discovery', kind: 'openocd' }], { quarantineAfterFailures: 100 });
    });
    afterAll(() => fake.stop());

    it('verify-fail: the exit status and the tool output appear once', { timeout: 60_000 }, async () => {
      const config: Partial<BenchServiceConfig> = {
        clock: systemClock,
        backend: 'probe',
        backends: ({ clock, quarantineStore }) => ({
          probe: new ProbeBackend({ bench: benchFile, clock, openocdPath: fakeOpenocdPath, probeRsPath: fakeProbeRsPath, toolEnv: fake.toolEnv, quarantineStore }),
        }),
      };
      const app = await startBenchTestApp(config);
      try {
        const api = benchClient(app.url);
        const token = await api.register('probe-agent');
        fake.setBehaviour('stm32f4-discovery', 'verify-fail');
        const elf = makeElf({ segments: [{ paddr: 0x0800_0000, data: new Uint8Array(128).fill(7) }] });
        const queued = await api.flash(token, { board: 'stm32f4-discovery', uartSeconds: 1 }, elf);
        const job = await api.settled(token, queued.job_id, { timeoutMs: 30_000 });
        expect(job.failure?.kind).toBe('flash-failed');
        const message = job.failure!.message;
        expect(message).toMatch(/\(exit status 1\); last output:\n/);
        expect(occurrences(message, '** Verify Failed **')).toBe(1);
        expect(message).not.toMatch(/exit code 1/);
        expect(message).not.toMatch(/; output: /);
      } finally {
        await app.close();
      }
    });
  });
});
