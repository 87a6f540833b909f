import { readFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import type { Backend } from '../../backends/backend.js';
import { loadFirmwareImage } from '../../backends/image-check.js';
import { QemuBackend } from '../../backends/qemu/qemu-backend.js';
import { RenodeBackend } from '../../backends/renode/renode-backend.js';
import { SimBackend } from '../../backends/sim/sim-backend.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { runDebugSession } from '../../harness/debug/debug-session.js';
import { renodeStandinPath } from '../fakes/renode-standin/standin-path.js';
import { allFactsHold, debugElf, gdbBatch, walkThroughFacts, walkThroughSession } from '../support/gdb-batch.js';
import { hilbenchCli } from '../support/compiled-cli.js';

/**
 * Real GDB in batch mode against `hilbench debug`'s session (issue 32): it connects, breaks at
 * main, continues to it, reads $pc, a global and a stack word, single-steps into a call and
 * detaches; the firmware then prints its line. On sim pico (rp2040js's GDB server), sim uno
 * (hilbench's avr8js stub, with gdb-avr's avr-gdb), a QEMU board (its gdbstub) and the Renode
 * stand-in (test/fakes/renode-standin: StartGdbServer).
 */
const root = path.resolve(import.meta.dirname, '../..');
const boards = loadBoardCatalog();

/** The walk-through on `boardId`, served by `hilbench debug`'s local session on `backend`. */
function debugWithGdb(backend: Backend, boardId: string) {
  const board = boards.find((b) => b.id === boardId)!;
  const image = loadFirmwareImage(readFileSync(debugElf(boardId)));
  return walkThroughSession(boardId, ({ listening, onUart }) =>
    runDebugSession(backend, board, image, {
      clock: systemClock,
      gdbPort: 0,
      idleTimeoutMs: 120_000,
      afterDetachSeconds: 2,
      onUart: (chunk) => onUart(Buffer.from(chunk.bytes).toString('latin1')),
      log: () => undefined,
      onListening: listening,
    }),
  );
}

describe('hilbench debug with real GDB', () => {
  it.each([
    ['pico', () => new SimBackend({ clock: systemClock })],
    ['uno', () => new SimBackend({ clock: systemClock })],
    ['mps2-an385', () => new QemuBackend({ clock: systemClock })],
    // Renode is not installable here: its stand-in answers StartGdbServer with QEMU's gdbstub.
    ['stm32f4-discovery', () => new RenodeBackend({ clock: systemClock, renodePath: renodeStandinPath })],
  ] as const)('%s: break at main, read $pc, a global and a stack word, step, detach; the firmware then prints', { timeout: 120_000 }, async (boardId, backend) => {
    const { gdb, outcome, uart } = await debugWithGdb(backend(), boardId);
    expect(walkThroughFacts(gdb), gdb).toEqual(allFactsHold);
    expect(outcome).toEqual({ outcome: 'passed', reason: 'the debugger detached; the firmware runs on' });
    expect(uart).toBe(`hilbench debug board=${boardId} counter=42\r\n`);
  });

  it('the CLI prints the target remote line, streams the UART to stdout and exits 0 after the detach', { timeout: 120_000 }, async () => {
    const child = execa('node', [hilbenchCli, 'debug', debugElf('pico'), '--board', 'pico', '--gdb-port', '0'], { cwd: root, reject: false });
    const port = await new Promise<number>((resolve, reject) => {
      let seen = '';
      child.stderr?.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        const line = /target remote localhost:(\d+)/.exec(seen);
        if (line) resolve(Number(line[1]));
      });
      void child.then((r) => reject(new Error(`hilbench debug ended before listening (${r.exitCode}): ${r.stderr}`)));
    });
    const gdb = await gdbBatch('pico', port, ['break main', 'continue', 'print debug_counter', 'detach']);
    const result = await child;
    expect(gdb.output).toMatch(/^\$1 = 41$/m);
    expect({ exitCode: result.exitCode, stdout: result.stdout }).toEqual({ exitCode: 0, stdout: 'hilbench debug board=pico counter=42' });
    expect(result.stderr).toMatch(/hilbench debug: passed: the debugger detached/);
  });

  it('the CLI says a run that never started never ran, with exit 2, as hilbench flash does', { timeout: 120_000 }, async () => {
    const result = await execa('node', [hilbenchCli, 'debug', debugElf('pico'), '--board', 'picco', '--gdb-port', '0'], { cwd: root, reject: false });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/^hilbench debug: never ran: board "picco" is not in the catalog/m);
  });
});
