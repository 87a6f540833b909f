import { execFileSync } from 'node:child_process';
import { SerialPortMock } from 'serialport';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackendError } from '../../backends/backend.js';
import { parseBenchFile } from '../../backends/probe/bench-file.js';
import { ProbeBackend } from '../../backends/probe/probe-backend.js';
import { startProbeGdbServer } from '../../backends/probe/probe-gdb-server.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { firmwareImage, makeElf } from '../support/make-elf.js';

/**
 * Debian's real OpenOCD, with no probe attached (as on CI): its no-probe path must come out as
 * `probe-not-found` quoting `Error: open failed` and exit status 1, so the stand-in's imitation
 * of that path is checked against the real thing. The serial side is the mock binding: only the
 * tool is under test. CI installs openocd (.ci/run); elsewhere this file says why it did not run.
 */
const openocd = (() => {
  try {
    return execFileSync('sh', ['-c', 'command -v openocd'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
})();

const serialPath = '/dev/serial/by-id/usb-STMicroelectronics_STM32_STLink_NOT-ATTACHED-if02';

describe.runIf(openocd !== undefined)(`real openocd (${openocd ?? 'not installed: apt-get install openocd'}) without a probe`, () => {
  beforeAll(() => SerialPortMock.binding.createPort(serialPath, { echo: false }));
  afterAll(() => SerialPortMock.binding.reset());

  it('maps "Error: open failed", exit 1, to probe-not-found and counts it towards quarantine', async () => {
    const board = loadBoardCatalog().find((b) => b.id === 'stm32f4-discovery')!;
    const bench = parseBenchFile(
      {
        version: 1,
        boards: {
          'stm32f4-discovery': {
            probe: { kind: 'openocd', serialNumber: 'NOT-ATTACHED', interface: 'interface/stlink.cfg' },
            serial: { path: serialPath },
            timeouts: { flashMs: 20_000 },
          },
        },
      },
      '/etc/hilbench/bench.yaml',
    );
    const backend = new ProbeBackend({ bench, clock: systemClock, openocdPath: openocd, serialBinding: SerialPortMock.binding });
    const device = await backend.open(board);
    try {
      const image = firmwareImage(makeElf({ segments: [{ paddr: 0x0800_0000, data: new Uint8Array(64) }] }));
      const error = await device.flash(image).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(BackendError);
      expect(error).toMatchObject({ kind: 'probe-not-found', exitCode: 1 });
      expect((error as BackendError).message).toMatch(/exit status 1/);
      expect((error as BackendError).outputTail).toMatch(/Error: open failed/);
      expect((error as BackendError).message).toMatch(/adapter serial NOT-ATTACHED/);
      expect((await backend.health(board.id)).consecutiveFailures).toBe(1);
    } finally {
      await device.close();
    }
  });

  it('maps the CMSIS-DAP no-probe line (Raspberry Pi Debug Probe on a Pico) to probe-not-found', async () => {
    const pico = loadBoardCatalog().find((b) => b.id === 'pico')!;
    const bench = parseBenchFile(
      {
        version: 1,
        boards: {
          pico: {
            probe: { kind: 'openocd', serialNumber: 'NOT-ATTACHED', interface: 'interface/cmsis-dap.cfg', adapterSpeedKhz: 5000 },
            serial: { path: serialPath },
          },
        },
      },
      '/etc/hilbench/bench.yaml',
    );
    const backend = new ProbeBackend({ bench, clock: systemClock, openocdPath: openocd, serialBinding: SerialPortMock.binding });
    const device = await backend.open(pico);
    try {
      const image = firmwareImage(makeElf({ segments: [{ paddr: 0x1000_0000, data: new Uint8Array(64) }] }));
      await expect(device.flash(image)).rejects.toMatchObject({
        kind: 'probe-not-found',
        exitCode: 1,
        outputTail: expect.stringContaining('unable to find a matching CMSIS-DAP device'),
      });
    } finally {
      await device.close();
    }
  });

  it('refuses the GDB server command line (hilbench debug) for want of a probe, not for its Tcl: bindto, gdb_port, the ports off, the gdb-detach handler', async () => {
    const error = await startProbeGdbServer({
      boardId: 'stm32f4-discovery',
      probe: { kind: 'openocd', serialNumber: 'NOT-ATTACHED', interface: 'interface/stlink.cfg', target: 'target/stm32f4x.cfg', resetMethod: 'system' },
      toolPath: openocd!,
      clock: systemClock,
      startTimeoutMs: 20_000,
      killGraceMs: 1_000,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ kind: 'probe-not-found', exitCode: 1, outputTail: expect.stringContaining('Error: open failed') });
    // A command OpenOCD did not understand would have stopped it before it looked for the probe.
    expect((error as BackendError).outputTail).not.toMatch(/invalid command|wrong # args|unknown/i);
    expect((error as BackendError).message).toMatch(/^GDB server on stm32f4-discovery .*gdb_port \d+.*no probe found/s);
  });
});
