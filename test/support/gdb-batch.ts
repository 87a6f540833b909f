import path from 'node:path';
import { execa } from 'execa';

const root = path.resolve(import.meta.dirname, '../..');

/** The debug program's image for `board` (firmware/debug/build.sh). */
export const debugElf = (board: string) => path.join(root, 'firmware/debug', `${board}.elf`);

/** Which GDB debugs a board: Debian's gdb-multiarch has no AVR target, gdb-avr's avr-gdb has. */
export const gdbFor = (board: string) => (board === 'uno' ? 'avr-gdb' : 'gdb-multiarch');

/**
 * The walk-through every debug test makes (issue 32): connect, break at main, continue to it,
 * read $pc, a global and a stack word, single-step into a call, detach. Run from the repository
 * root, so the ELF's relative source paths resolve.
 */
export const walkThrough = ['break main', 'continue', 'info symbol $pc', 'print debug_counter', 'next', 'x/4xb &stack_word', 'stepi', 'info symbol $pc', 'detach'];

/** Runs GDB in batch mode against `localhost:port` with `commands`; resolves with everything it printed. */
export async function gdbBatch(board: string, port: number, commands: readonly string[] = walkThrough): Promise<{ output: string; exitCode: number | undefined }> {
  const args = ['-nx', '--batch', '-ex', 'set confirm off', '-ex', 'set pagination off', '-ex', `file ${debugElf(board)}`, '-ex', `target remote localhost:${port}`];
  for (const command of commands) args.push('-ex', command);
  const result = await execa(gdbFor(board), args, { reject: false, cwd: root, all: true, timeout: 120_000 });
  return { output: String(result.all ?? ''), exitCode: result.exitCode };
}

/** The checks on the walk-through's output, as one object so a failure shows all of it. */
export function walkThroughFacts(output: string) {
  return {
    stoppedAtMain: /Breakpoint 1, main \(\) at .*debug\.c:\d+/.test(output),
    pcInMain: /^main \+ \d+ in section \.text/m.test(output),
    globalRead: /^\$1 = 41$/m.test(output),
    stackWordRead: /0xed\s+0x5e\s+0x00\s+0x00/.test(output),
    steppedIntoCall: /^board_init in section \.text/m.test(output),
    detached: /\[Inferior 1 \(.*\) detached\]/.test(output),
  };
}

export const allFactsHold = { stoppedAtMain: true, pcInMain: true, globalRead: true, stackWordRead: true, steppedIntoCall: true, detached: true };
