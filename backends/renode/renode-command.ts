import type { Board } from '../../boards/board-schema.js';
import { BackendError } from '../backend.js';
import { findExecutable } from '../process/find-executable.js';

/**
 * How hilbench starts and drives Renode (1.16): the command line, the monitor commands, and
 * where the executable comes from. Why the console monitor rather than `-e` scripts or the telnet
 * monitor (`-P`): docs/backends/renode.md, "Driving Renode".
 */
export const RENODE_INSTALL_HINT = 'install Renode 1.16 (https://renode.io) or set HILBENCH_RENODE';

/** `--console`: the monitor on stdin/stdout; `--plain`: no colour codes; no GUI. */
export const RENODE_ARGS: readonly string[] = ['--disable-xwt', '--console', '--plain'];

/** The machine hilbench creates; log lines name it and the prompt becomes `(dut) `. */
export const RENODE_MACHINE = 'dut';
/** The name of the UART server socket terminal (an "external" in Renode's terms). */
export const RENODE_TERMINAL = 'hilbench-uart';

/**
 * Resolves Renode: `renodePath` (the CLI fills it from --renode or HILBENCH_RENODE), else `renode`
 * on `searchPath` (default: $PATH).
 */
export function resolveRenode(renodePath: string | undefined, searchPath?: string): { command: string; found: string | undefined } {
  const command = renodePath ?? 'renode';
  return { command, found: searchPath === undefined ? findExecutable(command) : findExecutable(command, searchPath) };
}

/** The board's `backends.renode` entry; throws `unavailable` when the board has none. */
export function renodeKeysFor(board: Board): NonNullable<Board['backends']['renode']> {
  const keys = board.backends.renode;
  if (!keys) throw new BackendError('unavailable', `board ${board.id} has no backends.renode entry (no Renode platform describes it)`);
  return keys;
}

/** A monitor path token: `@` + the path, spaces escaped as Renode's tokenizer expects. */
export function pathToken(filePath: string): string {
  if (/["\n]/.test(filePath)) throw new BackendError('internal', `path not usable in a Renode monitor command: ${JSON.stringify(filePath)}`);
  return `@${filePath.replace(/ /g, '\\ ')}`;
}

export type SetupStep = 'machine' | 'platform' | 'elf' | 'terminal' | 'connect';

/** The monitor commands that set a board up, in order, each with the step it belongs to. */
export function renodeSetupCommands(board: Board, elfPath: string, port: number): Array<{ step: SetupStep; command: string }> {
  const keys = renodeKeysFor(board);
  return [
    { step: 'machine', command: `mach create "${RENODE_MACHINE}"` },
    { step: 'platform', command: `machine LoadPlatformDescription ${pathToken(keys.platform)}` },
    { step: 'elf', command: `sysbus LoadELF ${pathToken(elfPath)}` },
    // Third argument false: raw bytes, no telnet negotiation (IAC) in the UART stream.
    { step: 'terminal', command: `emulation CreateServerSocketTerminal ${port} "${RENODE_TERMINAL}" false` },
    { step: 'connect', command: `connector Connect ${keys.uart} ${RENODE_TERMINAL}` },
  ];
}
