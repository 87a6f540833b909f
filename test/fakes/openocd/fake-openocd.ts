import { existsSync } from 'node:fs';
import { FakeBoard, type FakeProbe, hangForever, readFakeProbes } from './fake-board.js';
import { serveFakeGdb } from './fake-gdb-server.js';

/**
 * Stand-in for OpenOCD 0.12 (`openocd` beside this file runs it). It accepts the command lines
 * hilbench uses (`-f`, `-c "adapter serial SN"`, `program FILE verify [reset] exit`,
 * `init; reset run; shutdown`, `init; reset halt; shutdown`, and the GDB server's `bindto`,
 * `gdb_port N`, `tcl_port disabled`, `telnet_port disabled`, the gdb-detach handler, `init; reset
 * halt` without shutdown: fake-gdb-server.ts) and answers as the real tool does:
 * everything on stderr, the `** Programming Started **` ... `** Verified OK **` markers, and the
 * real no-probe output (`Error: open failed`, exit 1) when the serial number is not attached.
 */
const argv = process.argv.slice(2);
const files: string[] = [];
const commands: string[] = [];
for (let i = 0; i < argv.length; i++) {
  const arg = argv[i]!;
  const value = argv[i + 1];
  if ((arg === '-f' || arg === '-c') && value !== undefined) {
    if (arg === '-f') files.push(value);
    else commands.push(...splitCommands(value));
    i++;
  } else {
    say(`Error: unexpected argument ${arg}`);
    process.exit(1);
  }
}

/** Splits a `-c` argument at the `;` that separate Tcl commands (not those inside braces). */
function splitCommands(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let current = '';
  for (const c of text) {
    if (c === '{') depth++;
    if (c === '}') depth--;
    if (c === ';' && depth === 0) {
      out.push(current);
      current = '';
    } else current += c;
  }
  out.push(current);
  return out.map((c) => c.trim()).filter(Boolean);
}

function say(line: string) {
  process.stderr.write(`${line}\n`);
}

say('Open On-Chip Debugger 0.12.0');
say('Licensed under GNU GPL v2');
say('For bug reports, read\n\thttp://openocd.org/doc/doxygen/bugs.html');

const serial = commands.find((c) => c.startsWith('adapter serial '))?.slice('adapter serial '.length).trim();
const probes = readFakeProbes();
const probe: FakeProbe | undefined = serial === undefined ? probes[0] : probes.find((p) => p.serialNumber === serial);
const interfaceFile = files.find((f) => f.includes('interface')) ?? '';
const firstAction = commands.find((c) => /^(program|init|reset)\b/.test(c)) ?? 'init';

if (!probe) {
  // What OpenOCD 0.12 prints with no adapter attached (backends.md, "Real probes").
  if (interfaceFile.includes('cmsis-dap')) say('Error: unable to find a matching CMSIS-DAP device');
  else if (interfaceFile.includes('jlink')) say('Error: No J-Link device found');
  else say('Error: open failed');
  say(`in procedure '${firstAction.split(' ')[0]}'`);
  say('** OpenOCD init failed **');
  say('shutdown command invoked');
  process.exit(1);
}

const board = new FakeBoard(probe);
board.log(`openocd ${argv.join(' ')}`);
say(`Info : adapter serial ${probe.serialNumber}`);
say('Info : clock speed 2000 kHz');
if (probe.behaviour === 'hang' || probe.behaviour === 'hang-ignore-term') {
  board.log(`hang pid=${process.pid}`);
  hangForever(probe.behaviour === 'hang-ignore-term');
} else {
  say('Info : Target voltage: 3.24');
  say('Info : [target.cpu] Cortex-M processor detected');
  process.exitCode = execute(probe, board);
}

function execute(probe: FakeProbe, board: FakeBoard): number {
  let gdbPort: number | undefined;
  let onDisconnect: 'resume-and-exit' | 'nothing' = 'nothing';
  for (const command of commands) {
    const [verb, ...rest] = command.split(/\s+/);
    if (verb === 'adapter' || verb === 'reset_config' || verb === 'init' || verb === 'bindto' || verb === 'tcl_port' || verb === 'telnet_port') continue;
    if (verb === 'gdb_port') {
      gdbPort = Number(rest[0]);
      continue;
    }
    if (verb === 'foreach') {
      // Only the handler hilbench installs is understood.
      if (!/configure -event gdb-detach \{ catch resume; shutdown \}/.test(command)) {
        say(`invalid command name "${command}"`);
        return 1;
      }
      onDisconnect = 'resume-and-exit';
      continue;
    }
    if (verb === 'program') {
      // `program {path with spaces} verify exit`: the path is braced.
      const match = /^program\s+(?:\{([^}]*)\}|(\S+))(.*)$/.exec(command);
      const file = match?.[1] ?? match?.[2] ?? '';
      const flags = (match?.[3] ?? '').trim().split(/\s+/);
      if (!existsSync(file)) {
        say(`Error: couldn't open ${file}`);
        say("in procedure 'program'");
        say('** Programming Failed **');
        return 1;
      }
      say('target halted due to debug-request, current mode: Thread');
      say('** Programming Started **');
      if (probe.behaviour === 'program-fail') {
        say('Error: error writing to flash at address 0x08000000 at offset 0x00000000');
        say('** Programming Failed **');
        say('shutdown command invoked');
        return 1;
      }
      board.program(file);
      say('** Programming Finished **');
      if (flags.includes('verify')) {
        say('** Verify Started **');
        if (probe.behaviour === 'verify-fail') {
          say('Error: checksum mismatch - attempting binary compare');
          say('** Verify Failed **');
          say('shutdown command invoked');
          return 1;
        }
        say('** Verified OK **');
      }
      if (flags.includes('reset')) {
        say('** Resetting Target **');
        board.run();
      }
      if (flags.includes('exit')) {
        say('shutdown command invoked');
        return 0;
      }
    } else if (verb === 'reset') {
      if (probe.behaviour === 'reset-fail') {
        say('Error: timed out while waiting for target halted');
        say("in procedure 'reset'");
        return 1;
      }
      if (rest[0] === 'halt' || rest[0] === 'init') {
        board.halt();
        say('target halted due to debug-request, current mode: Thread');
      } else board.run();
    } else if (verb === 'shutdown' || verb === 'exit') {
      say('shutdown command invoked');
      return 0;
    } else {
      say(`invalid command name "${verb}"`);
      return 1;
    }
  }
  // Without shutdown OpenOCD keeps serving GDB (on 3333 unless told otherwise).
  void serveFakeGdb({ port: gdbPort ?? 3333, board, elfPath: board.imagePath, onDisconnect, log: say }).catch((err: unknown) => {
    say(`Error: couldn't bind gdb to socket on port ${gdbPort ?? 3333}: ${(err as Error).message}`);
    process.exit(1);
  });
  return 0;
}
