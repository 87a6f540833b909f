import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { procStatFields } from '../backends/process/process-identity.js';
import { describe, expect, it } from 'vitest';
import { type FirmwareEntry, firmwarePath, loadFirmwareManifest } from '../firmware/examples/firmware-manifest.js';
import { checkQemu, checkSim, qemuStandIns, runQemu } from './check-firmware.js';

/** The firmware check must fail when an image does not do what its manifest entry says. */

const manifest = loadFirmwareManifest();
const entry = (board: string, program: string): FirmwareEntry => manifest.firmware.find((f) => f.board === board && f.program === program)!;
const bytes = (e: FirmwareEntry) => new Uint8Array(readFileSync(firmwarePath(e)));
const haveQemu = spawnSync('qemu-system-arm', ['--version']).status === 0;

describe('checkSim', () => {
  it('passes the committed images', () => {
    for (const program of ['exit', 'crash']) {
      for (const board of ['pico', 'uno']) expect(checkSim(entry(board, program), bytes(entry(board, program))).problems).toEqual([]);
    }
  });

  it('reports the wrong text, the wrong stop and the wrong exit code', () => {
    const exit = entry('pico', 'exit');
    // The crash image where the exit image was promised: text and stop both differ.
    const problems = checkSim(exit, bytes(entry('pico', 'crash')));
    expect(problems.problems).toEqual([
      expect.stringMatching(/^UART output "hilbench crash board=pico: .*" does not match \/\^hilbench exit board=pico code=3/),
      expect.stringMatching(/^stopped with \{"reason":"crashed".*expected reason exited$/),
    ]);
    expect(checkSim({ ...exit, exitCode: 4 }, bytes(exit)).problems).toEqual(['exit code 3, expected 4']);
  });

  it('fingerprints what a run printed, so a rebuild can be compared with the committed image', () => {
    const a = checkSim(entry('uno', 'exit'), bytes(entry('uno', 'exit'))).fingerprint;
    expect(a).toBe(checkSim(entry('uno', 'exit'), bytes(entry('uno', 'exit'))).fingerprint);
    expect(a).not.toBe(checkSim(entry('uno', 'exit'), bytes(entry('uno', 'crash'))).fingerprint);
  });
});

describe.skipIf(!haveQemu)('checkQemu (needs qemu-system-arm)', () => {
  it('passes the committed exit and crash images', async () => {
    for (const program of ['exit', 'crash']) {
      const e = entry('mps2-an385', program);
      expect(await checkQemu(e, firmwarePath(e), 'mps2-an385', 3)).toEqual([]);
    }
  });

  it('passes a committed image that runs until the limit ends it', async () => {
    const e = entry('lm3s6965evb', 'hello');
    expect(await checkQemu(e, firmwarePath(e), 'lm3s6965evb', 1)).toEqual([]);
  });

  it('reports an image that crashes where the manifest says it exits', async () => {
    const problems = await checkQemu(entry('mps2-an385', 'exit'), firmwarePath(entry('mps2-an385', 'crash')), 'mps2-an385', 3);
    expect(problems).toEqual([
      expect.stringMatching(/^UART output .* does not match/),
      expect.stringMatching(/^QEMU exit status 134, expected 3: .*Lockup/),
    ]);
  });

  it('reports an image that exits where the manifest says it runs for ever', async () => {
    const problems = await checkQemu(entry('mps2-an385', 'hello'), firmwarePath(entry('mps2-an385', 'exit')), 'mps2-an385', 3);
    expect(problems).toEqual([expect.stringMatching(/does not match/), expect.stringMatching(/^expected to run for 3 s, but QEMU exited with 3/)]);
  });
});

/** This process's children that have exited and wait to be reaped (state Z in /proc/<pid>/stat). */
function exitedChildren(): number[] {
  const exited: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const [state, ppid] = procStatFields(Number(name)) ?? []; // undefined: gone since the listing
    if (state === 'Z' && Number(ppid) === process.pid) exited.push(Number(name));
  }
  return exited;
}

describe.skipIf(!haveQemu || process.platform !== 'linux')('runQemu while the event loop is blocked', () => {
  it('does not call an image hung when its exit is read only after the limit passed', async () => {
    // CI runs the sim checks synchronously beside the QEMU ones: a long sim run blocks the loop
    // past a QEMU run's limit although QEMU aborted long before (seen in CI on netduinoplus2/crash).
    const e = entry('mps2-an385', 'crash');
    const run = runQemu('mps2-an385', firmwarePath(e), 0.05);
    const deadline = Date.now() + 60_000;
    while (exitedChildren().length === 0) {
      if (Date.now() > deadline) throw new Error('QEMU did not exit within 60 s of wall time; no exited child seen in /proc');
    }
    const result = await run;
    expect(result).toMatchObject({ status: 134, timedOut: false });
  });
});

describe.skipIf(!haveQemu)('QEMU stand-ins for boards QEMU does not model', () => {
  it('runs the stm32f4-discovery images on netduinoplus2 with USART2 as the console', async () => {
    const { machine, serialIndex } = qemuStandIns['stm32f4-discovery']!;
    for (const program of ['exit', 'crash']) {
      const e = entry('stm32f4-discovery', program);
      expect(await checkQemu(e, firmwarePath(e), machine, 3, serialIndex)).toEqual([]);
    }
    // On serial0 (USART1) the same image prints nothing: the check really looks at USART2.
    const e = entry('stm32f4-discovery', 'exit');
    expect(await checkQemu(e, firmwarePath(e), machine, 3, 0)).toEqual([expect.stringMatching(/^UART output "" does not match/)]);
  });
});
