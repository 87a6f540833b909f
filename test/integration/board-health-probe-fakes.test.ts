import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchFile } from '../../backends/probe/bench-file.js';
import { ProbeBackend } from '../../backends/probe/probe-backend.js';
import { systemClock } from '../../core/clock.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { adminSchema, boardHealthCheckSchema } from '../../wire/bench/bench-schemas.js';
import { boardHealthControlOf } from '../../backends/backend.js';
import { escapeHtml } from '../../server/bench/pages/html.js';
import { fakeBootLine } from '../fakes/openocd/fake-board.js';
import { FakeBench } from '../fakes/openocd/fake-bench.js';
import { firmwareImage, makeElf } from '../support/make-elf.js';
import { type BenchClient, benchClient } from './every-board-bench-client.js';

/**
 * Issue 4 end to end with the real probe backend: the bench service (system clock, since the
 * stand-in tools and socat ptys run in real time) drives `ProbeBackend` on the stand-in bench of
 * test/fakes/openocd, with board health in the service's own database. Three jobs fail the way a
 * real probe fails (verify error, exit 1), the board is quarantined with the probe's reason on
 * the API, the page and /admin; the quarantine survives a restart; a health check puts it back.
 */

const ADMIN = 'probe-admin';
const f4Elf = makeElf({ segments: [{ paddr: 0x0800_0000, data: new Uint8Array(128).fill(5) }] });

const fake = new FakeBench();
let benchFile: BenchFile;
beforeAll(async () => {
  const healthElf = path.join(fake.dir, 'health-f4.elf');
  writeFileSync(healthElf, f4Elf);
  benchFile = await fake.start(
    [{ boardId: 'stm32f4-discovery', kind: 'openocd', healthCheck: { elf: healthElf, expect: 'boot sha256=[0-9a-f]{16}', withinSeconds: 6 } }],
    { quarantineAfterFailures: 3 },
  );
});
afterAll(() => fake.stop());

const config = fake.serviceConfig(() => benchFile, ADMIN);

const f4Of = async (api: BenchClient) => (await api.boards()).find((b) => b.id === 'stm32f4-discovery')!;
const adminF4 = async (app: BenchTestApp) =>
  adminSchema.parse(await (await app.request('/admin', { headers: { 'x-admin-token': ADMIN } })).json()).boards.find((b) => b.id === 'stm32f4-discovery')!;

describe('board health with the probe backend on the stand-in bench', () => {
  it('is a BoardHealthControl with a health check, detected without importing its class in the server', () => {
    const control = boardHealthControlOf(new ProbeBackend({ bench: benchFile, clock: systemClock }));
    expect(control).toBeDefined();
    expect(typeof control!.healthCheck).toBe('function');
  });

  it('quarantines after 3 failed jobs over HTTP, keeps it across a restart, and a passing health check releases it', { timeout: 120_000 }, async () => {
    let app = await startBenchTestApp(config);
    try {
      let api = benchClient(app.url);
      const token = await api.register('probe-agent');
      fake.setBehaviour('stm32f4-discovery', 'verify-fail');
      for (let i = 0; i < 3; i++) {
        const queued = await api.flash(token, { board: 'stm32f4-discovery', uartSeconds: 1 }, f4Elf);
        const job = await api.settled(token, queued.job_id, { timeoutMs: 30_000 });
        expect(job).toMatchObject({ state: 'failed', failure: { kind: 'flash-failed' } });
      }
      const board = await f4Of(api);
      expect(board.status).toBe('offline');
      expect(board.offline_reason).toMatch(/^quarantined after 3 consecutive infrastructure failures: flash on stm32f4-discovery .*flash or verify failed \(exit status 1\)/);
      const reason = board.offline_reason!;
      expect(await api.page('/')).toContain(escapeHtml(reason));
      expect((await adminF4(app)).health).toMatchObject({ backend: 'probe', consecutive_failures: 3, quarantined: true, quarantine_reason: reason });
      expect(await api.openSessionRefused(token, 'stm32f4-discovery')).toMatchObject({ status: 503, detail: `board stm32f4-discovery is offline: ${reason}` });

      app = await app.restart(config);
      api = benchClient(app.url);
      expect(await f4Of(api)).toMatchObject({ status: 'offline', offline_reason: reason });

      // Still broken: the check fails and the board stays out.
      const failed = await app.request('/admin/boards/stm32f4-discovery/health-check', { method: 'POST', headers: { 'x-admin-token': ADMIN } });
      expect(boardHealthCheckSchema.parse(await failed.json())).toMatchObject({ passed: false, status: 'offline', reason: expect.stringMatching(/flash or verify failed/) });

      fake.setBehaviour('stm32f4-discovery', 'ok');
      const passed = await app.request('/admin/boards/stm32f4-discovery/health-check', { method: 'POST', headers: { 'x-admin-token': ADMIN } });
      const body = boardHealthCheckSchema.parse(await passed.json());
      expect(body).toMatchObject({ passed: true, reason: null, status: 'free', offline_reason: null, health: { consecutive_failures: 0, quarantined: false } });
      expect(body.uart_text).toContain(fakeBootLine(firmwareImage(f4Elf).sha256));

      const queued = await api.flash(token, { board: 'stm32f4-discovery', uartSeconds: 1 }, f4Elf);
      expect(await api.settled(token, queued.job_id, { timeoutMs: 30_000 })).toMatchObject({ state: 'done', failure: null });
    } finally {
      await app.close();
    }
  });
});
