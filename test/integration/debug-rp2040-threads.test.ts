import { readFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { loadFirmwareImage } from '../../backends/image-check.js';
import { SimBackend } from '../../backends/sim/sim-backend.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { runDebugSession } from '../../harness/debug/debug-session.js';

/**
 * Both RP2040 cores as GDB threads (issue 32, decision 0526's core 1): real gdb-multiarch in batch
 * mode on the multicore test firmware lists two threads, stops where core 1 hits a breakpoint
 * (the stop names thread 2), reads each core's pc, steps core 1 alone, and detaches; the firmware
 * then finishes its checks.
 */
const root = path.resolve(import.meta.dirname, '../..');
const elf = path.join(root, 'firmware/examples/pico/multicore.elf');

describe('sim pico: both cores as GDB threads', () => {
  it('lists core 0 and core 1, stops on core 1\'s breakpoint naming its thread, reads and steps each core', { timeout: 120_000 }, async () => {
    const board = loadBoardCatalog().find((b) => b.id === 'pico')!;
    let uart = '';
    let listening: (port: number) => void = () => undefined;
    const port = new Promise<number>((resolve) => (listening = resolve));
    const session = runDebugSession(new SimBackend({ clock: systemClock }), board, loadFirmwareImage(readFileSync(elf)), {
      clock: systemClock,
      gdbPort: 0,
      idleTimeoutMs: 120_000,
      afterDetachSeconds: 2,
      onUart: (chunk) => (uart += Buffer.from(chunk.bytes).toString('latin1')),
      log: () => undefined,
      onListening: listening,
    });
    const commands = ['info threads', 'break core1_main', 'continue', 'info threads', 'thread 2', 'info registers pc', 'thread 1', 'info registers pc', 'thread 2', 'stepi', 'info registers pc', 'thread 1', 'info registers pc', 'detach'];
    const args = ['-nx', '--batch', '-ex', 'set pagination off', '-ex', `file ${elf}`, '-ex', `target remote localhost:${await port}`];
    for (const command of commands) args.push('-ex', command);
    const gdb = await execa('gdb-multiarch', args, { reject: false, all: true, timeout: 120_000 });
    const output = String(gdb.all ?? '');
    const outcome = await session;

    // Before the launch core 1 waits in the boot ROM's holding pen.
    expect(output).toMatch(/^\* 1\s+Thread 1 \(core 0\)\s+0x10000140 in reset_handler/m);
    expect(output).toMatch(/^ {2}2\s+Thread 2 \(core 1 \(in the boot ROM's holding pen\)\)/m);
    expect(output).toMatch(/^Thread 2 hit Breakpoint 1, 0x[0-9a-f]+ in core1_main \(\)$/m);
    expect(output).toMatch(/^\* 2\s+Thread 2 \(core 1 \(running\)\)\s+0x[0-9a-f]+ in core1_main/m);
    const pcs = [...output.matchAll(/^pc\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+ <(\w+)\+?\d*>$/gm)].map((m) => ({ pc: m[1], in: m[2] }));
    expect(pcs).toHaveLength(4);
    const [core1AtBreak, core0, core1Stepped, core0Again] = pcs;
    // Core 1 at its breakpoint, core 0 elsewhere (waiting on the FIFO); a step of core 1 moves core 1 only.
    expect(core1AtBreak!.in).toBe('core1_main');
    expect(core0!.in).not.toBe('core1_main');
    expect(core1Stepped!.pc).not.toBe(core1AtBreak!.pc);
    expect(core0Again).toEqual(core0);
    expect(output).toMatch(/\[Inferior 1 \(Remote target\) detached\]/);
    expect(outcome).toEqual({ outcome: 'passed', reason: 'the debugger detached; the firmware runs on', stop: expect.objectContaining({ reason: 'exited', exitCode: 0 }) });
    expect(uart).toContain('multicore PASS');
  });
});
