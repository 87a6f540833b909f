import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Board } from '../../boards/board-schema.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { firmwareImage } from '../../test/support/make-elf.js';
import type { UartChunk } from '../backend.js';
import { QemuBackend } from './qemu-backend.js';

/**
 * One run of a board whose file asks for deterministic time (`qemu.icount`): QEMU is started with
 * `-icount shift=N,align=off,sleep=off` (read back from the process's own command line) and the
 * device states the guest clock. Needs qemu-system-arm (test/host-tool-suites.ts).
 */

const here = path.dirname(fileURLToPath(import.meta.url));
const an385 = loadBoardCatalog().find((b) => b.id === 'mps2-an385')!;
// shift=7: 128 ns a guest instruction, so the hello's first 100 ms SysTick tick comes quickly.
const deterministic: Board = { ...an385, backends: { qemu: { ...an385.backends.qemu!, icount: 7 } } };
const hello = new Uint8Array(readFileSync(path.join(here, '../../firmware/examples/mps2-an385/hello.elf')));

describe('QEMU with qemu.icount in the board file', () => {
  it('runs with -icount shift=7,align=off,sleep=off and states the icount clock', async () => {
    const device = await new QemuBackend({ clock: systemClock }).open(deterministic);
    try {
      expect(device.clockSource).toBe('icount shift=7 (128 ns per instruction)');
      await device.flash(firmwareImage(hello));
      // QEMU is running, held before the guest starts: its argv is what the backend spawned.
      const pid = (device as unknown as { pid: number | undefined }).pid!;
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      expect(argv.slice(argv.indexOf('-icount'), argv.indexOf('-icount') + 2)).toEqual(['-icount', 'shift=7,align=off,sleep=off']);
      let text = '';
      device.onUart((chunk: UartChunk) => (text += new TextDecoder().decode(chunk.bytes)));
      const stop = await device.run(20_000_000_000, { until: () => text.includes('tick 1\r\n') });
      expect(stop.reason).toBe('until');
      expect(text).toMatch(/^hilbench hello board=mps2-an385\r\ntick 1\r\n/);
      // UART timestamps are still host time: the socket carries bytes, not the guest's clock.
      expect(device.timeBase).toBe('wall');
    } finally {
      await device.close();
    }
  });
});
