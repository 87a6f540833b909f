import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { QemuBackend } from '../../backends/qemu/qemu-backend.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { EM_AVR } from '../../core/elf.js';
import { type FirmwareProgram, firmwarePath, loadFirmwareManifest } from '../../scenarios/firmware/firmware-manifest.js';
import { firmwareImage, makeElf } from '../support/make-elf.js';
import { describeBackendContract } from './backend-contract.js';

/**
 * The backend contract on real qemu-system-arm, for several machines, with the example firmware
 * of scenarios/firmware (hello prints a banner and a tick every 100 ms; exit stops with status 3
 * through semihosting; crash jumps to an execute-never address and locks up). Nothing is skipped
 * when QEMU is missing: the install-hint test and each board's availability test fail.
 */
const boards = loadBoardCatalog();
const manifest = loadFirmwareManifest();

function firmware(boardId: string, program: FirmwareProgram) {
  const entry = manifest.firmware.find((f) => f.board === boardId && f.program === program);
  if (!entry) throw new Error(`scenarios/firmware/manifest.json has no ${program} firmware for ${boardId}`);
  return { entry, image: firmwareImage(new Uint8Array(readFileSync(firmwarePath(entry)))) };
}

describe('qemu-system-arm is installed', () => {
  it('is on PATH (CI installs it: apt-get install -y qemu-system-arm)', async () => {
    const board = boards.find((b) => b.id === 'mps2-an385')!;
    await expect(new QemuBackend().availability(board)).resolves.toEqual({ available: true });
  });
});

for (const boardId of ['mps2-an385', 'mps2-an505', 'lm3s6965evb', 'netduinoplus2', 'microbit', 'stm32vldiscovery']) {
  const board = boards.find((b) => b.id === boardId);
  if (!board) throw new Error(`board ${boardId} is not in the catalog`);
  const hello = firmware(boardId, 'hello');
  const exit = firmware(boardId, 'exit');
  describeBackendContract('qemu', {
    backend: () => new QemuBackend(),
    board,
    hello: hello.image,
    helloPattern: new RegExp(hello.entry.uartPattern),
    // Banner and three 100 ms ticks: measured 0.32-0.74 s after release here (mps2-an505 slowest),
    // so 1.5 s leaves room for a loaded CI host.
    helloWithinSeconds: 1.5,
    wrongArchitecture: firmwareImage(makeElf({ machine: EM_AVR })),
    exits: { image: exit.image, exitCode: exit.entry.exitCode ?? 3 },
    crashes: firmware(boardId, 'crash').image,
  });
}
