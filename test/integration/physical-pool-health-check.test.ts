import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BenchFile, parseBenchFile } from '../../backends/probe/bench-file.js';
import { ProbeBackend } from '../../backends/probe/probe-backend.js';
import { systemClock } from '../../core/clock.js';
import { boardHealthCheckSchema } from '../../wire/bench/bench-schemas.js';
import { fakeBootLine } from '../fakes/openocd/fake-board.js';
import { FakeBench, fakeOpenocdPath, fakeProbeRsPath } from '../fakes/openocd/fake-bench.js';
import { firmwareImage, makeElf } from '../support/make-elf.js';
import { startBenchTestApp } from '../support/bench-test-app.js';

/**
 * The health check of one instance of a pool of physical boards (decision 0606), end to end with the
 * real probe backend on the stand-in bench of test/fakes/openocd: two F4 kits are one pool, each
 * entry with its own health-check firmware; checking an instance runs that entry's firmware on that
 * kit, and passing releases that instance alone.
 */

const ADMIN = 'pool-health-admin';
const fake = new FakeBench();
// Two different health-check images, so the UART shows whose firmware ran.
const leftElf = makeElf({ segments: [{ paddr: 0x0800_0000, data: new Uint8Array(128).fill(1) }] });
const rightElf = makeElf({ segments: [{ paddr: 0x0800_0000, data: new Uint8Array(128).fill(2) }] });
let bench: BenchFile;
let reordered: BenchFile;

beforeAll(async () => {
  await fake.start([
    { boardId: 'kit-a', kind: 'openocd' },
    { boardId: 'kit-b', kind: 'openocd' },
  ]);
  const kit = (instance: string, name: string, elf: Uint8Array) => {
    const file = path.join(fake.dir, `${instance}-health.elf`);
    writeFileSync(file, elf);
    return {
      instance,
      probe: { kind: 'openocd', serialNumber: `FAKE-${name.toUpperCase()}`, interface: 'interface/stlink.cfg' },
      serial: { path: fake.hostEnd(name), baudRate: 115200 },
      timeouts: { flashMs: 20_000, resetMs: 20_000, killGraceMs: 500 },
      healthCheck: { elf: file, expect: `boot sha256=${firmwareImage(elf).sha256.slice(0, 16)}`, withinSeconds: 6 },
    };
  };
  bench = parseBenchFile(
    { version: 1, boards: { 'stm32f4-discovery': [kit('left', 'kit-a', leftElf), kit('right', 'kit-b', rightElf)] } },
    path.join(fake.dir, 'bench.yaml'),
  );
  reordered = parseBenchFile(
    { version: 1, boards: { 'stm32f4-discovery': [kit('right', 'kit-b', rightElf), kit('left', 'kit-a', leftElf)] } },
    path.join(fake.dir, 'reordered.yaml'),
  );
});
afterAll(() => fake.stop());

const config = fake.serviceConfig(() => bench, ADMIN);

describe('a health check of one instance of a physical pool', () => {
  it("runs that entry's own firmware on that kit, and passing releases that instance alone", { timeout: 120_000 }, async () => {
    const app = await startBenchTestApp(config);
    const check = (board: string) => app.request(`/admin/boards/${board}/health-check`, { method: 'POST', headers: { 'x-admin-token': ADMIN } });
    try {
      const left = 'stm32f4-discovery.1@local';
      const right = 'stm32f4-discovery.2@local';
      const store = app.server.service.store;
      const reason = 'quarantined after 3 consecutive infrastructure failures: flash-failed: (the test)';
      await store.boardHealth.put(right, { consecutiveFailures: 3, lastFailure: 'flash-failed: (the test)', quarantine: { sinceMs: systemClock.nowMs(), reason } });

      // The board as a whole is not checked: a pool's check names an instance.
      const whole = await check('stm32f4-discovery');
      expect(whole.status).toBe(409);
      expect(((await whole.json()) as { detail: string }).detail).toContain('a health check runs on one of its instances (POST /admin/boards/{instance}/health-check)');

      // Kit b still broken: its check fails, and the instance stays quarantined.
      fake.setBehaviour('kit-b', 'verify-fail');
      const failed = boardHealthCheckSchema.parse(await (await check(right)).json());
      expect(failed).toMatchObject({ board: right, passed: false, status: 'offline', health: { quarantined: true, quarantine_reason: reason } });
      expect(failed.reason).toMatch(/^health check on instance stm32f4-discovery\.2@local of stm32f4-discovery \(entry "right"\) failed: flash on stm32f4-discovery \(entry "right"\) .*flash or verify failed/);

      // Repaired: the check runs kit b's own firmware on kit b and releases that instance.
      fake.setBehaviour('kit-b', 'ok');
      const passed = boardHealthCheckSchema.parse(await (await check(right)).json());
      expect(passed).toMatchObject({ board: right, passed: true, reason: null, status: 'free', offline_reason: null, health: { consecutive_failures: 0, quarantined: false } });
      expect(passed.uart_text).toContain(fakeBootLine(firmwareImage(rightElf).sha256));
      expect(passed.uart_text).not.toContain(fakeBootLine(firmwareImage(leftElf).sha256));

      // Kit a is checked with its own firmware; the board's own record was never touched.
      const other = boardHealthCheckSchema.parse(await (await check(left)).json());
      expect(other).toMatchObject({ board: left, passed: true });
      expect(other.uart_text).toContain(fakeBootLine(firmwareImage(leftElf).sha256));
      expect((await store.boardHealth.get('stm32f4-discovery')).quarantine).toBeUndefined();

      // An instance no worker reports is a 404, as for a release.
      expect((await check('stm32f4-discovery.3@local')).status).toBe(404);
    } finally {
      await app.close();
    }
  });
});

describe('instance ids of a physical pool (decision 0607)', () => {
  it('number the entries in the file\'s order: reordered, .1 is the other kit, and every message names the entry', { timeout: 60_000 }, async () => {
    const instance = 'stm32f4-discovery.1@local';
    const probe = (file: BenchFile) => new ProbeBackend({ bench: file, clock: systemClock, openocdPath: fakeOpenocdPath, probeRsPath: fakeProbeRsPath, toolEnv: fake.toolEnv });
    fake.setBehaviour('kit-a', 'ok');
    fake.setBehaviour('kit-b', 'verify-fail');
    const before = await probe(bench).healthCheck('stm32f4-discovery', { instance });
    expect(before).toMatchObject({ passed: true, uartText: expect.stringContaining(fakeBootLine(firmwareImage(leftElf).sha256)) });
    // The same id after the file's entries swapped places: kit b (entry "right"), and the failure says so.
    const after = await probe(reordered).healthCheck('stm32f4-discovery', { instance });
    expect(after.passed).toBe(false);
    expect(after.passed ? '' : after.reason).toMatch(/^health check on instance stm32f4-discovery\.1@local of stm32f4-discovery \(entry "right"\) failed: flash on stm32f4-discovery \(entry "right"\) /);
    fake.setBehaviour('kit-b', 'ok');
  });
});
