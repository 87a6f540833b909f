import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { QemuBackend } from '../../backends/qemu/qemu-backend.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { EM_AVR } from '../../core/elf.js';
import { type FirmwareProgram, firmwarePath, loadFirmwareManifest } from '../../firmware/examples/firmware-manifest.js';
import { firmwareImage, makeElf } from '../support/make-elf.js';
import { describeBackendContract } from './backend-contract.js';

/**
 * The backend contract on real qemu-system-arm for one machine, with the example firmware of
 * firmware/examples (hello prints a banner and a tick every 100 ms; exit stops with status 3
 * through semihosting; crash jumps to an execute-never address and locks up). One test file per
 * board (`qemu-<board>.contract.test.ts`), so the boards run in parallel and none is the long
 * pole. Nothing is skipped when QEMU is missing: the install-hint test and the board's
 * availability test fail.
 */
export function describeQemuContract(boardId: string): void {
  const board = loadBoardCatalog().find((b) => b.id === boardId);
  if (!board) throw new Error(`board ${boardId} is not in the catalog`);
  const manifest = loadFirmwareManifest();
  const firmware = (program: FirmwareProgram) => {
    const entry = manifest.firmware.find((f) => f.board === boardId && f.program === program);
    if (!entry) throw new Error(`firmware/examples/manifest.json has no ${program} firmware for ${boardId}`);
    return { entry, image: firmwareImage(new Uint8Array(readFileSync(firmwarePath(entry)))) };
  };

  describe('qemu-system-arm is installed', () => {
    it('is on PATH (CI installs it: apt-get install -y qemu-system-arm)', async () => {
      await expect(new QemuBackend({ clock: systemClock }).availability(board)).resolves.toEqual({ available: true });
    });
  });

  const hello = firmware('hello');
  const exit = firmware('exit');
  describeBackendContract('qemu', {
    backend: () => new QemuBackend({ clock: systemClock }),
    board,
    hello: hello.image,
    helloPattern: new RegExp(hello.entry.uartPattern),
    // No helloWithinSeconds: QEMU runs on wall time, so the suite waits for the banner and three
    // 100 ms ticks (0.32-0.74 s after release here) instead of racing a deadline.
    wrongArchitecture: firmwareImage(makeElf({ machine: EM_AVR })),
    exits: { image: exit.image, exitCode: exit.entry.exitCode ?? 3 },
    crashes: firmware('crash').image,
  });
}
