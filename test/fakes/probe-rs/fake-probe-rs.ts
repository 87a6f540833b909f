import { existsSync } from 'node:fs';
import { FakeBoard, hangForever, readFakeProbes } from '../openocd/fake-board.js';
import { serveFakeGdb } from '../openocd/fake-gdb-server.js';

/**
 * Stand-in for probe-rs 0.32 (`probe-rs` beside this file runs it): `download --chip C --probe
 * VID:PID:SN [--protocol P] [--verify] FILE`, `reset --chip C --probe VID:PID:SN` and `gdb --chip C
 * --probe VID:PID:SN --gdb-connection-string HOST:PORT --reset-halt` (fake-gdb-server.ts). Output and
 * exit codes follow probe-rs's source (it is not installable here): `Error: No connected probes
 * were found.` with nothing attached, `Probe was not found.` for an unknown selector, exit 1.
 */
const [subcommand, ...rest] = process.argv.slice(2);
const options = new Map<string, string>();
const flags = new Set<string>();
const positional: string[] = [];
for (let i = 0; i < rest.length; i++) {
  const arg = rest[i]!;
  if (arg === '--verify' || arg === '--reset-halt') flags.add(arg);
  else if (arg.startsWith('--') && rest[i + 1] !== undefined) options.set(arg, rest[++i]!);
  else positional.push(arg);
}

function fail(message: string): never {
  process.stderr.write(`Error: ${message}\n`);
  process.exit(1);
}

if (subcommand !== 'download' && subcommand !== 'reset' && subcommand !== 'gdb') fail(`unrecognized subcommand '${subcommand ?? ''}'`);
if (!options.has('--chip')) fail('the following required arguments were not provided:\n  --chip <CHIP>');

const probes = readFakeProbes();
if (probes.length === 0) fail('No connected probes were found.');
const selector = options.get('--probe');
const serial = selector?.split(':')[2];
const probe = serial === undefined ? probes[0] : probes.find((p) => p.serialNumber === serial);
if (!probe) fail('Failed to open the debug probe.\n\nCaused by:\n    Probe was not found.');

const board = new FakeBoard(probe);
board.log(`probe-rs ${process.argv.slice(2).join(' ')}`);
if (probe.behaviour === 'hang' || probe.behaviour === 'hang-ignore-term') {
  board.log(`hang pid=${process.pid}`);
  hangForever(probe.behaviour === 'hang-ignore-term');
} else if (subcommand === 'download') {
  const file = positional[0];
  if (!file || !existsSync(file)) fail(`No such file or directory: ${file ?? '(none)'}`);
  process.stderr.write('      Erasing ✔ 100% [####################] 16.00 KiB @ 40.00 KiB/s (took 0s)\n');
  if (probe.behaviour === 'program-fail') fail('Failed to flash the firmware.\n\nCaused by:\n    Failed to program page at address 0x10000000.');
  board.program(file);
  process.stderr.write('  Programming ✔ 100% [####################] 16.00 KiB @ 20.00 KiB/s (took 1s)\n');
  if (flags.has('--verify') && probe.behaviour === 'verify-fail') fail('Verification failed.');
  process.stderr.write('     Finished in 1.20s\n');
} else if (subcommand === 'gdb') {
  if (probe.behaviour === 'reset-fail' && flags.has('--reset-halt')) fail('An ARM specific error occurred.\n\nCaused by:\n    Timeout occured during operation.');
  board.halt();
  const address = options.get('--gdb-connection-string') ?? 'localhost:1337';
  const port = Number(address.split(':').at(-1));
  console.log(`Firing up GDB stub for Armv6m cores at [${address}]`);
  void serveFakeGdb({ port, board, elfPath: board.imagePath, onDisconnect: 'resume-on-detach', log: (line) => process.stderr.write(`${line}\n`) }).catch((err: unknown) =>
    fail(`During the execution of GDB an error was encountered:\n${(err as Error).message}`),
  );
} else {
  if (probe.behaviour === 'reset-fail') fail('An ARM specific error occurred.\n\nCaused by:\n    Timeout occured during operation.');
  board.run();
}
