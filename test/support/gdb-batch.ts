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

/** What a debug session that serves GDB on a port ends with (local or through a server). */
export interface WalkedSession {
  /** Everything GDB printed. */
  gdb: string;
  outcome: { outcome: string; reason: string };
  /** The firmware's UART, as text. */
  uart: string;
}

/**
 * The walk-through against one debug session, local or through a server (issue 32): `start`
 * begins the session, calls `listening` with its GDB port and `onUart` with what the firmware
 * prints, and resolves with its outcome; GDB then walks the debug program on `board`.
 */
export async function walkThroughSession(
  board: string,
  start: (hooks: { listening: (port: number) => void; onUart: (text: string) => void }) => Promise<{ outcome: string; reason: string }>,
): Promise<WalkedSession> {
  let uart = '';
  let listening: (port: number) => void = () => undefined;
  const port = new Promise<number>((resolve) => (listening = resolve));
  const session = start({ listening, onUart: (text) => (uart += text) });
  // Only the wait for the port races the session: once GDB runs, its detach ends the session first.
  const first = await Promise.race([port.then((p) => ({ port: p })), session.then((ended) => ({ ended }))]);
  const gdb = 'port' in first ? (await gdbBatch(board, first.port)).output : `the session ended before GDB could connect: ${JSON.stringify(first.ended)}`;
  const outcome = await session;
  return { gdb, outcome: { outcome: outcome.outcome, reason: outcome.reason }, uart };
}
