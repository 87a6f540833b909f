/**
 * A stand-in for `renode` 1.16 (Renode cannot be installed on this host). It speaks the same
 * command line, console monitor (prompts, command echo-free output, error lines), log line
 * format and UART server socket as Renode does for what the hilbench Renode backend uses, and it
 * fails the same ways. What it does NOT do is Renode's CPU emulation: `start` runs the loaded ELF
 * in qemu-system-arm on a machine with the same memory map and UART registers (platforms.ts).
 * docs/backends/renode.md lists what is faithful and what is not, with the Renode sources each
 * message comes from.
 *
 * Failure modes on request, env RENODE_STANDIN_FAULT:
 *   bad-repl        LoadPlatformDescription fails with a platform parse error
 *   bad-elf         LoadELF fails as for a file that is not an ELF
 *   port-in-use     CreateServerSocketTerminal fails as when the port is taken
 *   crash-on-start  the process aborts (SIGABRT, like an unhandled .NET exception) on `start`
 *   hang            the monitor stops answering after the first prompt and ignores SIGTERM
 * Env RENODE_STANDIN_LOG_STYLE=bracketed prints `[HH:mm:ss.ffff] [INFO] ...` (newer Renode
 * builds) instead of 1.16's `HH:mm:ss.ffff [INFO] ...`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ElfError, loadableSegments, parseElf } from '../../../core/elf.js';
import { type StandinPlatform, standinPlatforms } from './platforms.js';

const INSTALL_DIR = path.dirname(fileURLToPath(import.meta.url));
const VERSION = 'Renode, version 1.16.1.0 (standin-hilbench)';
const fault = process.env.RENODE_STANDIN_FAULT ?? '';
const bracketed = process.env.RENODE_STANDIN_LOG_STYLE === 'bracketed';

// ---- command line (Renode's src/UI/Options.cs names) -------------------------------------------
interface Options {
  console: boolean;
  plain: boolean;
  hideLog: boolean;
  port: number | undefined;
  pidFile: string | undefined;
  execute: string[];
  script: string | undefined;
}

function parseArgs(argv: string[]): Options {
  const options: Options = { console: false, plain: false, hideLog: false, port: undefined, pidFile: undefined, execute: [], script: undefined };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined) usage(`Option '${arg}' requires a value.`);
      return v;
    };
    switch (arg) {
      case '--console':
        options.console = true;
        break;
      case '-p':
      case '--plain':
        options.plain = true;
        break;
      case '--hide-log':
        options.hideLog = true;
        break;
      case '--disable-xwt':
      case '--disable-gui':
      case '--hide-monitor':
      case '--hide-analyzers':
        break;
      case '-P':
      case '--port':
        options.port = Number(value());
        break;
      case '--pid-file':
        options.pidFile = value();
        break;
      case '-e':
      case '--execute':
        options.execute.push(value());
        break;
      case '-v':
      case '--version':
        process.stdout.write(`${VERSION}\n`);
        process.exit(0);
        break;
      default:
        if (arg.startsWith('-')) usage(`Unknown option: ${arg}`);
        options.script = arg;
    }
  }
  return options;
}

function usage(message: string): never {
  process.stderr.write(`${message}\nUsage: renode [options] [file]\n`);
  process.exit(1);
}

const options = parseArgs(process.argv.slice(2));
if (options.pidFile) writeFileSync(options.pidFile, String(process.pid));
if (!options.console) {
  // The stand-in implements only the console monitor; say so rather than pretend to listen.
  process.stderr.write('renode-standin: only --console is implemented (the telnet monitor, -P, is not)\n');
  process.exit(2);
}

// ---- output -----------------------------------------------------------------------------------
function out(text: string) {
  process.stdout.write(text);
}

function timestamp(): string {
  const d = new Date();
  const two = (n: number) => String(n).padStart(2, '0');
  const time = `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds() * 10).padStart(4, '0')}`;
  return bracketed ? `[${time}]` : time;
}

/** Renode's console log backend: `<time> [LEVEL] <source>: <message>` (FormattedTextBackend). */
function log(level: 'INFO' | 'WARNING' | 'ERROR' | 'DEBUG', source: string | undefined, message: string) {
  if (options.hideLog) return;
  out(`${timestamp()} [${level}] ${source ? `${source}: ` : ''}${message}\n`);
}

/** Monitor errors (Monitor.WriteError; red unless --plain). */
function error(message: string) {
  out(options.plain ? `${message}\n` : `\x1b[31m${message}\x1b[0m\n`);
}

class CommandError extends Error {}

// ---- the emulation ----------------------------------------------------------------------------
interface Terminal {
  name: string;
  server: net.Server;
  client: net.Socket | undefined;
  telnet: boolean;
  /** Bytes written before a client connected: Renode queues them (SocketServerProvider). */
  queue: Buffer[];
}

const state = {
  machine: undefined as string | undefined,
  platform: undefined as StandinPlatform | undefined,
  elfPath: undefined as string | undefined,
  terminals: new Map<string, Terminal>(),
  /** Renode UART name -> terminal name. */
  connections: new Map<string, string>(),
  cpu: undefined as ChildProcess | undefined,
  pendingInput: [] as Buffer[],
  started: false,
};

function prompt(): string {
  return `(${state.machine ?? 'monitor'}) `;
}

/** `@path`: Renode tries the path as given, then relative to its install dir (MonitorPath). */
function resolvePath(token: string): { given: string; found: string | undefined } {
  const given = token.startsWith('@') ? token.slice(1) : token;
  for (const candidate of [path.resolve(given), path.join(INSTALL_DIR, given)]) {
    if (existsSync(candidate)) return { given, found: candidate };
  }
  return { given, found: undefined };
}

function requireMachine() {
  if (!state.machine) throw new CommandError('No machine selected. Use "mach create" or "mach set" first.');
}

function createMachine(name: string | undefined) {
  state.machine = name ?? 'machine-0';
  log('INFO', undefined, 'System bus created.');
}

function loadPlatform(token: string) {
  requireMachine();
  const { given, found } = resolvePath(token);
  // Renode: CreationDriver.ProcessFile -> RecoverableException("Could not find file '{0}'.")
  if (!found) throw new CommandError(`Could not find file '${given}'.`);
  if (fault === 'bad-repl') {
    throw new CommandError(`Error E00: Syntax error, unexpected end of input; expected ':'.\nAt ${found}:1:1:\nusing "./stm32f4_discovery.repl"\n^`);
  }
  const key = path.relative(INSTALL_DIR, found);
  const platform = standinPlatforms[key];
  if (!platform) {
    throw new CommandError(`renode-standin does not model platform '${given}' (it models: ${Object.keys(standinPlatforms).join(', ')})`);
  }
  state.platform = platform;
}

function loadElf(token: string) {
  requireMachine();
  if (!state.platform) throw new CommandError('Could not find device sysbus');
  const { given, found } = resolvePath(token);
  // Renode: ELFUtils.LoadELF wraps every loader failure as "Error while loading ELF: ...".
  if (!found) throw new CommandError(`Error while loading ELF: Could not find file '${path.resolve(given)}'.`);
  if (fault === 'bad-elf') throw new CommandError(`Error while loading ELF: Could not load ELF from path: ${found}`);
  let segments;
  try {
    segments = loadableSegments(parseElf(new Uint8Array(readFileSync(found))));
  } catch (err) {
    if (err instanceof ElfError) throw new CommandError(`Error while loading ELF: Could not load ELF from path: ${found}`);
    throw err;
  }
  for (const segment of segments) {
    log('INFO', 'sysbus', `Loading block of ${segment.fileSizeBytes} bytes length at 0x${segment.paddr.toString(16).toUpperCase()}.`);
  }
  state.elfPath = found;
}

async function createTerminal(portText: string, name: string, telnetText: string | undefined) {
  const port = Number(portText);
  if (!Number.isInteger(port)) throw new CommandError(`Could not convert '${portText}' to Int32`);
  if (port < 0 || port > 65535) throw new CommandError('Port must be between 0 and 65535');
  const telnet = telnetText === undefined ? true : telnetText === 'true';
  const fail = () => new CommandError(`Unable to create '0.0.0.0:${port}' socket:[AddressAlreadyInUse] Address already in use`);
  if (fault === 'port-in-use') throw fail();
  const terminal: Terminal = { name, server: net.createServer(), client: undefined, telnet, queue: [] };
  // Real Renode binds IPAddress.Any (SocketServerProvider.Start): every interface, not loopback.
  await new Promise<void>((resolve, reject) => {
    terminal.server.once('error', (err: NodeJS.ErrnoException) => reject(err.code === 'EADDRINUSE' ? fail() : err));
    terminal.server.listen({ port, host: '0.0.0.0', backlog: 1 }, () => resolve());
  });
  terminal.server.on('connection', (socket) => {
    if (terminal.client) {
      socket.destroy();
      return;
    }
    terminal.client = socket;
    if (terminal.telnet) socket.write(Buffer.from([255, 253, 0, 255, 253, 31, 255, 251, 1, 255, 251, 3, 255, 252, 34]));
    for (const chunk of terminal.queue.splice(0)) socket.write(chunk);
    socket.on('data', (data) => toUart(data));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (terminal.client === socket) terminal.client = undefined;
    });
  });
  state.terminals.set(name, terminal);
}

function connect(uart: string, terminalName: string) {
  requireMachine();
  if (!state.platform) throw new CommandError(`Could not find device ${uart}`);
  if (!(uart in state.platform.uarts)) throw new CommandError(`Could not find peripheral ${uart}`);
  if (!state.terminals.has(terminalName)) throw new CommandError(`Could not find external ${terminalName}`);
  state.connections.set(uart, terminalName);
}

/** Client bytes for the UART receiver; held while no CPU runs (Renode's UART model buffers them). */
function toUart(data: Buffer) {
  if (state.cpu?.stdin) state.cpu.stdin.write(data);
  else state.pendingInput.push(data);
}

function toTerminal(data: Buffer) {
  const terminalName = [...state.connections.values()][0];
  const terminal = terminalName ? state.terminals.get(terminalName) : undefined;
  if (!terminal) return;
  if (terminal.client) terminal.client.write(data);
  else terminal.queue.push(data);
}

/** CPU execution, delegated: qemu-system-arm with the connected UART's serial index on stdio. */
function startCpu() {
  const platform = state.platform;
  if (!platform || !state.elfPath) return;
  const connected = [...state.connections.keys()][0];
  const index = connected === undefined ? -1 : platform.uarts[connected]!;
  const serials: string[] = [];
  for (let i = 0; i <= Math.max(index, 0); i++) serials.push('-serial', i === index ? 'stdio' : 'null');
  const qemu = spawn(
    process.env.RENODE_STANDIN_QEMU ?? 'qemu-system-arm',
    ['-M', platform.qemuMachine, '-nographic', '-monitor', 'none', ...serials, '-kernel', state.elfPath],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  state.cpu = qemu;
  for (const data of state.pendingInput.splice(0)) qemu.stdin.write(data);
  let stderr = '';
  qemu.stdout.on('data', (data: Buffer) => toTerminal(data));
  qemu.stderr.on('data', (data: Buffer) => (stderr += data.toString('utf8')));
  qemu.on('error', (err) => log('ERROR', 'cpu', `renode-standin could not start ${err.message}: CPU execution needs qemu-system-arm`));
  // The abort is logged on 'exit', not 'close': QEMU's stdout (the UART) may still be in the pipe,
  // or still be held by another process (test/fakes/renode-standin/late-uart-qemu.ts), so the
  // abort line can reach Renode's console before the firmware's last UART bytes reach the socket
  // client. That is deliberate: real Renode logs `CPU abort` from the emulation thread and writes
  // the UART through the socket terminal, and nothing orders the two either; the backend must
  // cope (it drains the socket after the abort, docs/backends/renode.md).
  qemu.on('exit', () => {
    if (state.cpu !== qemu) return;
    state.cpu = undefined;
    const fatal = /qemu: fatal: (.*)/.exec(stderr);
    if (fatal) {
      const pc = /\bR15=([0-9a-f]{8})/.exec(stderr)?.[1] ?? '0';
      // Renode: TranslationCPU logs "CPU abort [PC=0x{0:X}]: {1}." at Error and halts the core.
      log('ERROR', 'cpu', `CPU abort [PC=0x${parseInt(pc, 16).toString(16).toUpperCase()}]: ${fatal[1]!.trim()}.`);
    } else if (stderr.trim()) {
      log('ERROR', 'cpu', `CPU stopped: ${stderr.trim().split('\n').at(-1)}`);
    }
  });
}

function stopCpu(how: 'kill' | 'pause' | 'resume') {
  const cpu = state.cpu;
  if (!cpu) return;
  if (how === 'kill') {
    state.cpu = undefined;
    cpu.kill('SIGKILL');
  } else cpu.kill(how === 'pause' ? 'SIGSTOP' : 'SIGCONT');
}

function start() {
  if (state.started) {
    out('Emulation is already started. Ignoring command\n');
    return;
  }
  out('Starting emulation...\n');
  if (fault === 'crash-on-start') {
    process.stderr.write('Unhandled exception. System.InvalidOperationException: renode-standin injected crash-on-start\n');
    process.kill(process.pid, 'SIGABRT');
    return;
  }
  state.started = true;
  if (!state.machine) return;
  if (state.cpu) stopCpu('resume');
  else startCpu();
  log('INFO', state.machine, 'Machine started.');
}

function pause() {
  if (!state.started) return;
  state.started = false;
  stopCpu('pause');
  if (state.machine) log('INFO', state.machine, 'Machine paused.');
}

function reset() {
  requireMachine();
  // Machine.Reset keeps the paused/started state and zeroes memory; the monitor then runs the
  // `reset` macro, which nobody registered here (Monitor.ResetMachine warns about exactly that).
  const wasStarted = state.started;
  stopCpu('kill');
  state.elfPath = undefined;
  log('WARNING', undefined, 'No action for reset - macro reset is not registered.');
  if (wasStarted) startCpu();
}

/** `emulation RunFor "hh:mm:ss[.fffffff]"`: runs that long (here: host time) and pauses. */
async function runFor(text: string) {
  const match = /^"?(\d+):(\d+):(\d+(?:\.\d+)?)"?$/.exec(text);
  if (!match) throw new CommandError(`Could not convert '${text}' to TimeInterval`);
  const seconds = Number(match[1]) * 3600 + Number(match[2]) * 60 + Number(match[3]);
  start();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  pause();
}

/** Ends the emulator child and waits (bounded) until it is gone, so nothing outlives us. */
async function killCpuAndWait(): Promise<void> {
  const cpu = state.cpu;
  if (!cpu || cpu.exitCode !== null || cpu.signalCode !== null) return;
  const gone = new Promise((resolve) => cpu.once('exit', resolve));
  stopCpu('kill');
  await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 1000))]);
}

async function quit(): Promise<never> {
  out('Renode is quitting\n');
  await killCpuAndWait();
  process.exit(0);
}

/** Splits a monitor line into tokens; quoted strings keep their spaces and lose their quotes. */
function tokenize(line: string): string[] {
  const tokens: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|(\S+)/g;
  for (let m = re.exec(line); m; m = re.exec(line)) tokens.push(m[1] ?? m[2]!);
  return tokens;
}

async function execute(line: string): Promise<void> {
  const tokens = tokenize(line.trim());
  const [head, verb, ...rest] = tokens;
  if (!head) return;
  try {
    if (head === 'mach' && verb === 'create') createMachine(rest[0]);
    else if (head === 'machine' && verb === 'LoadPlatformDescription' && rest[0]) loadPlatform(rest[0]);
    else if (head === 'machine' && verb === 'Reset') reset();
    else if (head === 'sysbus' && verb === 'LoadELF' && rest[0]) loadElf(rest[0]);
    else if (head === 'emulation' && verb === 'CreateServerSocketTerminal' && rest[0] && rest[1]) await createTerminal(rest[0], rest[1], rest[2]);
    else if (head === 'emulation' && verb === 'RunFor' && rest[0]) await runFor(rest[0]);
    else if (head === 'connector' && verb === 'Connect' && rest[0] && rest[1]) connect(rest[0], rest[1]);
    else if (head === 'start' && verb === undefined) start();
    else if (head === 'pause' && verb === undefined) pause();
    else if (head === 'quit' && verb === undefined) await quit();
    else if (head === 'version' && verb === undefined) out(`${VERSION}\n`);
    else if (['mach', 'machine', 'sysbus', 'emulation', 'connector'].includes(head)) throw new CommandError(`Could not find matching method ${verb ?? ''} for ${head}`);
    else {
      // Monitor.cs: "No such command or device: {0}" (printed without the "error executing" header).
      error(`No such command or device: ${head}`);
    }
  } catch (err) {
    if (!(err instanceof CommandError)) throw err;
    // Monitor.PrintException: the header line, then the message (inner messages indented by tabs).
    error(`There was an error executing command '${line.trim()}'`);
    error(err.message);
  }
}

// ---- main -------------------------------------------------------------------------------------
log('INFO', undefined, `Loaded monitor commands from: ${path.join(INSTALL_DIR, 'scripts', 'monitor.py')}`);
out(`${VERSION}\n`);

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
    out(prompt());
  });
}

out(prompt());
for (const command of commands) {
  busy = busy.then(() => out(`${command.trim()}\n`));
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
    void killCpuAndWait().then(() => process.exit(0));
  });
}
process.on('exit', () => stopCpu('kill'));
