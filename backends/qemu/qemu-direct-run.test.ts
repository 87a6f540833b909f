import { describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { firmwarePath, loadFirmwareManifest } from '../../firmware/examples/firmware-manifest.js';
import { runQemuDirect } from './qemu-direct-run.js';

const boards = loadBoardCatalog();
const manifest = loadFirmwareManifest();
const entry = (board: string, program: 'hello' | 'exit') => manifest.firmware.find((f) => f.board === board && f.program === program)!;

describe('runQemuDirect (the benchmark baseline)', () => {
  it('captures serial0 for the given host time and stops QEMU', async () => {
    const hello = entry('mps2-an385', 'hello');
    const run = await runQemuDirect(boards.find((b) => b.id === 'mps2-an385')!, firmwarePath(hello), { seconds: 1, clock: systemClock });
    expect(run.timedOut).toBe(true);
    expect(run.exit).toMatchObject({ stoppedByUs: true });
    expect(new TextDecoder().decode(run.uart)).toMatch(new RegExp(hello.uartPattern));
    expect(run.wallMs).toBeGreaterThanOrEqual(1000);
  });

  it('returns early with the firmware\'s exit status', async () => {
    const exit = entry('microbit', 'exit');
    const run = await runQemuDirect(boards.find((b) => b.id === 'microbit')!, firmwarePath(exit), { seconds: 20, clock: systemClock });
    expect(run.timedOut).toBe(false);
    expect(run.exit.exitCode).toBe(exit.exitCode);
    expect(new TextDecoder().decode(run.uart)).toMatch(new RegExp(exit.uartPattern));
  });
});
