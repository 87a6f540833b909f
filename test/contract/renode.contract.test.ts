import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { findExecutable } from '../../backends/process/find-executable.js';
import { RenodeBackend } from '../../backends/renode/renode-backend.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { EM_AVR } from '../../core/elf.js';
import { type FirmwareProgram, firmwarePath, loadFirmwareManifest } from '../../firmware/examples/firmware-manifest.js';
import { renodeStandinPath } from '../fakes/renode-standin/standin-path.js';
import { firmwareImage, makeElf } from '../support/make-elf.js';
import { describeBackendContract } from './backend-contract.js';

/**
 * The backend contract for Renode, run against the stand-in (test/fakes/renode-standin), which
 * speaks Renode 1.16's command line, monitor and UART socket and executes the firmware in
 * qemu-system-arm (docs/backends/renode.md says what that does and does not prove). With a real
 * Renode installed, HILBENCH_RENODE=/path/to/renode runs the same suite against it.
 */
const board = loadBoardCatalog().find((b) => b.id === 'stm32f4-discovery')!;
const manifest = loadFirmwareManifest();

function firmware(program: FirmwareProgram) {
  const entry = manifest.firmware.find((f) => f.board === board.id && f.program === program);
  if (!entry) throw new Error(`firmware/examples/manifest.json has no ${program} firmware for ${board.id}`);
  return { entry, image: firmwareImage(new Uint8Array(readFileSync(firmwarePath(entry)))) };
}

if (!process.env.HILBENCH_RENODE) {
  describe('the Renode stand-in can execute firmware', () => {
    it('finds qemu-system-arm (CI installs it: apt-get install -y qemu-system-arm)', () => {
      expect(findExecutable('qemu-system-arm'), 'install qemu-system-arm (apt-get install -y qemu-system-arm)').toBeDefined();
    });
  });
}

const hello = firmware('hello');
describeBackendContract(process.env.HILBENCH_RENODE ? 'renode' : 'renode (stand-in)', {
  backend: () => new RenodeBackend({ clock: systemClock, renodePath: process.env.HILBENCH_RENODE ?? renodeStandinPath }),
  board,
  hello: hello.image,
  helloPattern: new RegExp(hello.entry.uartPattern),
  // No helloWithinSeconds: Renode (and its stand-in) run on wall time, so the suite waits for the
  // banner and three 100 ms ticks (0.23-0.36 s after `start` here) instead of racing a deadline.
  wrongArchitecture: firmwareImage(makeElf({ machine: EM_AVR })),
  // Renode has no firmware-decided exit, so no `exits`; the lockup shows as a CPU abort.
  crashes: firmware('crash').image,
});
