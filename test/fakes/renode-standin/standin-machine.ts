import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { ElfError, loadableSegments, parseElf } from '../../../core/elf.js';
import { type StandinPlatform, standinPlatforms } from './platforms.js';
import { CommandError, type StandinConsole } from './standin-console.js';

/**
 * The stand-in's emulation: one machine with its platform, loaded ELF, UART socket terminals and
 * the qemu-system-arm child that executes the firmware in place of Renode's CPU (renode-standin.ts
 * lists the faults it can inject).
 */

/**
 * Env RENODE_STANDIN_QUEUE_TRACE: a file the stand-in appends every UART byte it queues for a
 * terminal no client has connected to yet, as it queues it. Not Renode's: a test's event to wait
 * on (a test of the queue connects once bytes are queued, instead of sleeping and hoping).
 */
const QUEUE_TRACE_PATH = process.env.RENODE_STANDIN_QUEUE_TRACE;

export interface Terminal {
  name: string;
  server: net.Server;
  client: net.Socket | undefined;
  telnet: boolean;
  /** Bytes written before a client connected: Renode queues them (SocketServerProvider). */
  queue: Buffer[];
}

/** The machine the monitor commands act on, with Renode's messages for each failure. */
export class StandinMachine {
  machine: string | undefined;
  platform: StandinPlatform | undefined;
  elfPath: string | undefined;
  terminals = new Map<string, Terminal>();
  /** Renode UART name -> terminal name. */
  connections = new Map<string, string>();
  cpu: ChildProcess | undefined;
  pendingInput: Buffer[] = [];
  started = false;

  constructor(
    private readonly console: StandinConsole,
    /** The injected failure, from RENODE_STANDIN_FAULT ('' for none). */
    private readonly fault: string,
    /** Where `@path` tokens resolve relative to, as Renode's install directory. */
    private readonly installDir: string,
  ) {}

  prompt(): string {
    return `(${this.machine ?? 'monitor'}) `;
  }

  /** `@path`: Renode tries the path as given, then relative to its install dir (MonitorPath). */
  resolvePath(token: string): { given: string; found: string | undefined } {
    const given = token.startsWith('@') ? token.slice(1) : token;
    for (const candidate of [path.resolve(given), path.join(this.installDir, given)]) {
      if (existsSync(candidate)) return { given, found: candidate };
    }
    return { given, found: undefined };
  }

  requireMachine() {
    if (!this.machine) throw new CommandError('No machine selected. Use "mach create" or "mach set" first.');
  }

  createMachine(name: string | undefined) {
    this.machine = name ?? 'machine-0';
    this.console.log('INFO', undefined, 'System bus created.');
  }

  loadPlatform(token: string) {
    this.requireMachine();
    const { given, found } = this.resolvePath(token);
    // Renode: CreationDriver.ProcessFile -> RecoverableException("Could not find file '{0}'.")
    if (!found) throw new CommandError(`Could not find file '${given}'.`);
    if (this.fault === 'bad-repl') {
      throw new CommandError(`Error E00: Syntax error, unexpected end of input; expected ':'.\nAt ${found}:1:1:\nusing "./stm32f4_discovery.repl"\n^`);
    }
    const key = path.relative(this.installDir, found);
    const platform = standinPlatforms[key];
    if (!platform) {
      throw new CommandError(`renode-standin does not model platform '${given}' (it models: ${Object.keys(standinPlatforms).join(', ')})`);
    }
    this.platform = platform;
  }

  loadElf(token: string) {
    this.requireMachine();
    if (!this.platform) throw new CommandError('Could not find device sysbus');
    const { given, found } = this.resolvePath(token);
    // Renode: ELFUtils.LoadELF wraps every loader failure as "Error while loading ELF: ...".
    if (!found) throw new CommandError(`Error while loading ELF: Could not find file '${path.resolve(given)}'.`);
    if (this.fault === 'bad-elf') throw new CommandError(`Error while loading ELF: Could not load ELF from path: ${found}`);
    let segments;
    try {
      segments = loadableSegments(parseElf(new Uint8Array(readFileSync(found))));
    } catch (err) {
      if (err instanceof ElfError) throw new CommandError(`Error while loading ELF: Could not load ELF from path: ${found}`);
      throw err;
    }
    for (const segment of segments) {
      this.console.log('INFO', 'sysbus', `Loading block of ${segment.fileSizeBytes} bytes length at 0x${segment.paddr.toString(16).toUpperCase()}.`);
    }
    this.elfPath = found;
  }

  async createTerminal(portText: string, name: string, telnetText: string | undefined) {
    const port = Number(portText);
    if (!Number.isInteger(port)) throw new CommandError(`Could not convert '${portText}' to Int32`);
    if (port < 0 || port > 65535) throw new CommandError('Port must be between 0 and 65535');
    const telnet = telnetText === undefined ? true : telnetText === 'true';
    const fail = () => new CommandError(`Unable to create '0.0.0.0:${port}' socket:[AddressAlreadyInUse] Address already in use`);
    if (this.fault === 'port-in-use') throw fail();
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
      socket.on('data', (data) => this.toUart(data));
      socket.on('error', () => undefined);
      socket.on('close', () => {
        if (terminal.client === socket) terminal.client = undefined;
      });
    });
    this.terminals.set(name, terminal);
  }

  connect(uart: string, terminalName: string) {
    this.requireMachine();
    if (!this.platform) throw new CommandError(`Could not find device ${uart}`);
    if (!(uart in this.platform.uarts)) throw new CommandError(`Could not find peripheral ${uart}`);
    if (!this.terminals.has(terminalName)) throw new CommandError(`Could not find external ${terminalName}`);
    this.connections.set(uart, terminalName);
  }

  /** Client bytes for the UART receiver; held while no CPU runs (Renode's UART model buffers them). */
  toUart(data: Buffer) {
    if (this.cpu?.stdin) this.cpu.stdin.write(data);
    else this.pendingInput.push(data);
  }

  toTerminal(data: Buffer) {
    const terminalName = [...this.connections.values()][0];
    const terminal = terminalName ? this.terminals.get(terminalName) : undefined;
    if (!terminal) return;
    if (terminal.client) terminal.client.write(data);
    else {
      terminal.queue.push(data);
      if (QUEUE_TRACE_PATH) appendFileSync(QUEUE_TRACE_PATH, data);
    }
  }

  /**
   * `machine StartGdbServer <port> [autostartEmulation]`: Renode's GDB server on `port`, the
   * emulation started with the core waiting for the debugger. Here QEMU's gdbstub serves it
   * (-S -gdb), so GDB talks to QEMU's stub where it would talk to Renode's.
   */
  startGdbServer(portText: string) {
    this.requireMachine();
    const port = Number(portText);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new CommandError(`Could not convert '${portText}' to Int32`);
    if (!this.elfPath) throw new CommandError('Could not find device sysbus');
    this.stopCpu('kill');
    this.startCpu(['-S', '-gdb', `tcp:127.0.0.1:${port}`]);
    this.started = true;
    this.console.log('INFO', this.machine, `GDB server with all CPUs started on port :${port}`);
  }

  /** CPU execution, delegated: qemu-system-arm with the connected UART's serial index on stdio. */
  startCpu(extraArgs: readonly string[] = []) {
    const platform = this.platform;
    if (!platform || !this.elfPath) return;
    const connected = [...this.connections.keys()][0];
    const index = connected === undefined ? -1 : platform.uarts[connected]!;
    const serials: string[] = [];
    for (let i = 0; i <= Math.max(index, 0); i++) serials.push('-serial', i === index ? 'stdio' : 'null');
    const qemu = spawn(
      process.env.RENODE_STANDIN_QEMU ?? 'qemu-system-arm',
      ['-M', platform.qemuMachine, '-nographic', '-monitor', 'none', ...serials, ...extraArgs, '-kernel', this.elfPath],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    this.cpu = qemu;
    for (const data of this.pendingInput.splice(0)) qemu.stdin.write(data);
    let stderr = '';
    qemu.stdout.on('data', (data: Buffer) => this.toTerminal(data));
    qemu.stderr.on('data', (data: Buffer) => (stderr += data.toString('utf8')));
    qemu.on('error', (err) => this.console.log('ERROR', 'cpu', `renode-standin could not start ${err.message}: CPU execution needs qemu-system-arm`));
    // The abort is logged on 'exit', not 'close': QEMU's stdout (the UART) may still be in the pipe,
    // or still be held by another process (test/fakes/renode-standin/late-uart-qemu.ts), so the
    // abort line can reach Renode's console before the firmware's last UART bytes reach the socket
    // client. That is deliberate: real Renode logs `CPU abort` from the emulation thread and writes
    // the UART through the socket terminal, and nothing orders the two either; the backend must
    // cope (it drains the socket after the abort, docs/backends/renode.md).
    qemu.on('exit', () => {
      if (this.cpu !== qemu) return;
      this.cpu = undefined;
      const fatal = /qemu: fatal: (.*)/.exec(stderr);
      if (fatal) {
        const pc = /\bR15=([0-9a-f]{8})/.exec(stderr)?.[1] ?? '0';
        // Renode: TranslationCPU logs "CPU abort [PC=0x{0:X}]: {1}." at Error and halts the core.
        this.console.log('ERROR', 'cpu', `CPU abort [PC=0x${parseInt(pc, 16).toString(16).toUpperCase()}]: ${fatal[1]!.trim()}.`);
      } else if (stderr.trim()) {
        this.console.log('ERROR', 'cpu', `CPU stopped: ${stderr.trim().split('\n').at(-1)}`);
      }
    });
  }

  stopCpu(how: 'kill' | 'pause' | 'resume') {
    const cpu = this.cpu;
    if (!cpu) return;
    if (how === 'kill') {
      this.cpu = undefined;
      cpu.kill('SIGKILL');
    } else cpu.kill(how === 'pause' ? 'SIGSTOP' : 'SIGCONT');
  }

  start() {
    if (this.started) {
      this.console.out('Emulation is already started. Ignoring command\n');
      return;
    }
    this.console.out('Starting emulation...\n');
    if (this.fault === 'crash-on-start') {
      process.stderr.write('Unhandled exception. System.InvalidOperationException: renode-standin injected crash-on-start\n');
      process.kill(process.pid, 'SIGABRT');
      return;
    }
    this.started = true;
    if (!this.machine) return;
    if (this.cpu) this.stopCpu('resume');
    else this.startCpu();
    this.console.log('INFO', this.machine, 'Machine started.');
  }

  pause() {
    if (!this.started) return;
    this.started = false;
    this.stopCpu('pause');
    if (this.machine) this.console.log('INFO', this.machine, 'Machine paused.');
  }

  reset() {
    this.requireMachine();
    // Machine.Reset keeps the paused/started state and zeroes memory; the monitor then runs the
    // `reset` macro, which nobody registered here (Monitor.ResetMachine warns about exactly that).
    const wasStarted = this.started;
    this.stopCpu('kill');
    this.elfPath = undefined;
    this.console.log('WARNING', undefined, 'No action for reset - macro reset is not registered.');
    if (wasStarted) this.startCpu();
  }

  /** `emulation RunFor "hh:mm:ss[.fffffff]"`: runs that long (here: host time) and pauses. */
  async runFor(text: string) {
    const match = /^"?(\d+):(\d+):(\d+(?:\.\d+)?)"?$/.exec(text);
    if (!match) throw new CommandError(`Could not convert '${text}' to TimeInterval`);
    const seconds = Number(match[1]) * 3600 + Number(match[2]) * 60 + Number(match[3]);
    this.start();
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    this.pause();
  }

  /** Ends the emulator child and waits (bounded) until it is gone, so nothing outlives us. */
  async killCpuAndWait(): Promise<void> {
    const cpu = this.cpu;
    if (!cpu || cpu.exitCode !== null || cpu.signalCode !== null) return;
    const gone = new Promise((resolve) => cpu.once('exit', resolve));
    this.stopCpu('kill');
    await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 1000))]);
  }
}
