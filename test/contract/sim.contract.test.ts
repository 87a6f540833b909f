import { readFileSync } from 'node:fs';
import { SimBackend } from '../../backends/sim/sim-backend.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { EM_ARM, EM_AVR } from '../../core/elf.js';
import { firmwarePath, loadFirmwareManifest } from '../../firmware/examples/firmware-manifest.js';
import { firmwareImage, makeElf } from '../support/make-elf.js';
import { describeBackendContract } from './backend-contract.js';

/**
 * The backend contract on the pure-TypeScript simulator: pico on rp2040js, uno on avr8js, with
 * the example firmware from firmware/examples (manifest.json says what each prints and how it
 * ends). Unmodelled accesses fail the test instead of warning.
 */
const boards = loadBoardCatalog();
const manifest = loadFirmwareManifest();

function firmware(boardId: string, program: 'hello' | 'exit' | 'crash' | 'multicore' | 'multicore-sdk') {
  const entry = manifest.firmware.find((f) => f.board === boardId && f.program === program);
  if (!entry) throw new Error(`firmware/examples/manifest.json has no ${program} for ${boardId}`);
  return { image: firmwareImage(new Uint8Array(readFileSync(firmwarePath(entry)))), entry };
}

/** A self-checking pico program: its UART pattern and exit code from the manifest. */
function selfCheck(program: 'multicore' | 'multicore-sdk') {
  const { image, entry } = firmware('pico', program);
  return { program, image, uartPattern: new RegExp(entry.uartPattern), exitCode: entry.exitCode ?? 0 };
}

const backend = () =>
  new SimBackend({
    clock: systemClock,
    onUnmodelled: (message) => {
      throw new Error(`unmodelled access in a contract run: ${message}`);
    },
  });

for (const [boardId, wrongMachine] of [
  ['pico', EM_AVR],
  ['uno', EM_ARM],
] as const) {
  const board = boards.find((b) => b.id === boardId);
  if (!board) throw new Error(`board ${boardId} is not in the catalog`);
  const exit = firmware(boardId, 'exit');
  if (exit.entry.exitCode === null) throw new Error(`the manifest gives no exit code for ${boardId}'s exit firmware`);
  describeBackendContract('sim', {
    backend,
    board,
    hello: firmware(boardId, 'hello').image,
    // The banner and the first tick (100 ms of board time in).
    helloPattern: new RegExp(`^hilbench hello board=${boardId}\\r\\ntick 1\\r\\n`),
    helloWithinSeconds: 0.15,
    wrongArchitecture: firmwareImage(makeElf({ machine: wrongMachine })),
    exits: { image: exit.image, exitCode: exit.entry.exitCode },
    crashes: firmware(boardId, 'crash').image,
    // Both RP2040 cores: launch, FIFOs, spinlocks, an interrupt on core 1, a divider per core.
    selfChecks: boardId === 'pico' ? [selfCheck('multicore'), selfCheck('multicore-sdk')] : [],
  });
}
