/**
 * A stand-in for `renode` 1.16 (Renode cannot be installed on this host). It speaks the same
 * command line, console monitor (prompts, command echo-free output, error lines), log line
 * format and UART server socket as Renode does for what the hilbench Renode backend uses, and it
 * fails the same ways. What it does NOT do is Renode's CPU emulation: `start` runs the loaded ELF
 * in qemu-system-arm on a machine with the same memory map and UART registers (platforms.ts).
 * docs/backends/renode.md lists what is faithful and what is not, with the Renode sources each
 * message comes from.
 *
 * Split: standin-command-line.ts (options), standin-console.ts (output), standin-machine.ts (the
 * emulation); this file is the monitor loop.
 *
 * Failure modes on request, env RENODE_STANDIN_FAULT:
 *   bad-repl        LoadPlatformDescription fails with a platform parse error
 *   bad-elf         LoadELF fails as for a file that is not an ELF
 *   port-in-use     CreateServerSocketTerminal fails as when the port is taken
 *   crash-on-start  the process aborts (SIGABRT, like an unhandled .NET exception) on `start`
 *   hang            the monitor stops answering after the first prompt and ignores SIGTERM
 * Env RENODE_STANDIN_LOG_STYLE=bracketed prints `[HH:mm:ss.ffff] [INFO] ...` (newer Renode
 * builds) instead of 1.16's `HH:mm:ss.ffff [INFO] ...`. Env RENODE_STANDIN_QUEUE_TRACE names a
 * file the UART bytes queued before a client connects are appended to (standin-machine.ts).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs, VERSION } from './standin-command-line.js';
import { CommandError, stdoutConsole, tokenize } from './standin-console.js';
import { StandinMachine } from './standin-machine.js';

const INSTALL_DIR = path.dirname(fileURLToPath(import.meta.url));
const fault = process.env.RENODE_STANDIN_FAULT ?? '';
const bracketed = process.env.RENODE_STANDIN_LOG_STYLE === 'bracketed';

const options = parseArgs(process.argv.slice(2));
if (options.pidFile) writeFileSync(options.pidFile, String(process.pid));
if (!options.console) {
  // The stand-in implements only the console monitor; say so rather than pretend to listen.
  process.stderr.write('renode-standin: only --console is implemented (the telnet monitor, -P, is not)\n');
  process.exit(2);
}

const io = stdoutConsole({ hideLog: options.hideLog, plain: options.plain, bracketed });
const machine = new StandinMachine(io, fault, INSTALL_DIR);

async function quit(): Promise<never> {
  io.out('Renode is quitting\n');
  await machine.killCpuAndWait();
  process.exit(0);
}

async function execute(line: string): Promise<void> {
  const tokens = tokenize(line.trim());
  const [head, verb, ...rest] = tokens;
  if (!head) return;
  try {
    if (head === 'mach' && verb === 'create') machine.createMachine(rest[0]);
    else if (head === 'machine' && verb === 'LoadPlatformDescription' && rest[0]) machine.loadPlatform(rest[0]);
    else if (head === 'machine' && verb === 'Reset') machine.reset();
    else if (head === 'sysbus' && verb === 'LoadELF' && rest[0]) machine.loadElf(rest[0]);
    else if (head === 'emulation' && verb === 'CreateServerSocketTerminal' && rest[0] && rest[1]) await machine.createTerminal(rest[0], rest[1], rest[2]);
    else if (head === 'emulation' && verb === 'RunFor' && rest[0]) await machine.runFor(rest[0]);
    else if (head === 'connector' && verb === 'Connect' && rest[0] && rest[1]) machine.connect(rest[0], rest[1]);
    else if (head === 'machine' && verb === 'StartGdbServer' && rest[0]) machine.startGdbServer(rest[0]);
    else if (head === 'start' && verb === undefined) machine.start();
    else if (head === 'pause' && verb === undefined) machine.pause();
    else if (head === 'quit' && verb === undefined) await quit();
    else if (head === 'version' && verb === undefined) io.out(`${VERSION}\n`);
    else if (['mach', 'machine', 'sysbus', 'emulation', 'connector'].includes(head)) throw new CommandError(`Could not find matching method ${verb ?? ''} for ${head}`);
    else {
      // Monitor.cs: "No such command or device: {0}" (printed without the "error executing" header).
      io.error(`No such command or device: ${head}`);
    }
  } catch (err) {
    if (!(err instanceof CommandError)) throw err;
    // Monitor.PrintException: the header line, then the message (inner messages indented by tabs).
    io.error(`There was an error executing command '${line.trim()}'`);
    io.error(err.message);
  }
}

// ---- main -------------------------------------------------------------------------------------
io.log('INFO', undefined, `Loaded monitor commands from: ${path.join(INSTALL_DIR, 'scripts', 'monitor.py')}`);
io.out(`${VERSION}\n`);

const commands: string[] = [...options.execute.flatMap((e) => e.split(';'))];
let busy = Promise.resolve();
let hung = false;

function enqueue(line: string) {
  busy = busy.then(async () => {
    if (hung) return;
    await execute(line);
    if (fault === 'hang') {
      // Stop answering for good, and ignore polite requests to quit, like a wedged runtime.
      hung = true;
      return;
    }
    io.out(machine.prompt());
  });
}

io.out(machine.prompt());
for (const command of commands) {
  busy = busy.then(() => io.out(`${command.trim()}\n`));
  enqueue(command);
}

const input = readline.createInterface({ input: process.stdin, terminal: false });
input.on('line', (line) => enqueue(line));
input.on('close', () => {
  // Console closed: Renode keeps running until told to quit; so do we (SIGTERM still ends us).
});
for (const signal of ['SIGINT', 'SIGHUP', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (hung) return;
    void machine.killCpuAndWait().then(() => process.exit(0));
  });
}
process.on('exit', () => machine.stopCpu('kill'));
