import { rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Board } from '../../boards/board-schema.js';
import { type Clock, type TimerHandle } from '../../core/clock.js';
import {
  type Availability,
  type Backend,
  BackendError,
  type BackendErrorKind,
  type Device,
  type FirmwareImage,
  type RunOptions,
  type RunStop,
  throwIfCancelled,
  type UartChunk,
} from '../backend.js';
import { checkImageForBoard } from '../image-check.js';
import { EmulatorProcess } from '../process/emulator-process.js';
import { defaultScratchParent, makeScratchDir } from '../process/scratch-dir.js';
import { RENODE_ARGS, RENODE_INSTALL_HINT, renodeKeysFor, renodeSetupCommands, resolveRenode, type SetupStep, pathToken } from './renode-command.js';
import { cpuAbortOf } from './renode-log.js';
import { RenodeCommandError, RenodeMonitor, RenodeMonitorGone } from './renode-monitor.js';
import { SocketUart, writeUartSocket } from '../socket-uart.js';
import { waitForWallRun } from '../wall-run.js';
import { RENODE_DRAIN_QUIET_MS, RENODE_DRAIN_TIMEOUT_MS, waitForUartQuiet } from './wait-for-uart-quiet.js';

/**
 * The Renode backend: boards with `backends.renode` run in Renode, driven through its console
 * monitor (docs/backends/renode.md).
 *
 * - `flash` starts Renode, creates the machine, loads the platform and the ELF, creates a UART
 *   server socket terminal, connects the board's UART to it and connects to that socket, all
 *   before the emulation starts: the core is "held in reset" and no byte can be missed.
 * - the first `run` sends `start`; UART timestamps count from then, in host time
 *   (`timeBase: 'wall'`: Renode's virtual time is not visible per byte through the socket).
 * - `reset` pauses, resets the machine and loads the ELF again (Machine.Reset zeroes memory);
 *   the next `run` starts it again. The Renode process and the socket stay.
 * - a `CPU abort` log line is a crash. It travels on Renode's console while the UART bytes travel
 *   through the socket, so the abort can be read before the firmware's last bytes: the run goes
 *   on reading the socket until it has been quiet for `drainQuietMs`, then ends `crashed`; what
 *   still arrives after that is counted in `droppedUartBytes`. Renode has no firmware-decided
 *   exit, so `exited` never comes from this backend.
 */
export interface RenodeBackendOptions {
  /** Renode executable; default `renode` on PATH (bin/ fills it from --renode or HILBENCH_RENODE). */
  renodePath?: string;
  /** Environment whose PATH finds Renode, passed to it (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** Host clock of every timeout (injected: the system clock in production). */
  clock: Clock;
  /** Bound on Renode's first prompt, host ms. Renode (.NET) takes seconds to start; default 60 s. */
  startTimeoutMs?: number;
  /** Bound on each monitor command's prompt, host ms; default 30 s. */
  commandTimeoutMs?: number;
  /** SIGTERM grace before SIGKILL, host ms; default 3 s. */
  killGraceMs?: number;
  /** How long `quit` may take before SIGTERM, host ms; default 3 s. */
  quitTimeoutMs?: number;
  /**
   * After a `CPU abort` line, how long the UART socket must stay quiet before the run ends, host
   * ms (the abort can be read before the firmware's last bytes); default `RENODE_DRAIN_QUIET_MS`, 200 ms.
   */
  drainQuietMs?: number;
  /** Bound on that whole drain, host ms; default `RENODE_DRAIN_TIMEOUT_MS`, 2 s. Later bytes are counted as dropped. */
  drainTimeoutMs?: number;
  /** Picks the TCP port for the UART terminal (default: a free loopback port chosen by the OS). */
  pickPort?: () => Promise<number>;
  /** Parent of the per-device scratch dir `hbr-<pid>-<start>-XXXXXX`; default the OS temp dir. */
  tempDir?: string;
}

/** Attempts at a UART port before giving up: another process can take a free port before Renode binds it. */
const PORT_ATTEMPTS = 3;

export class RenodeBackend implements Backend {
  readonly name = 'renode' as const;
  constructor(private readonly options: RenodeBackendOptions) {}

  async availability(board: Board): Promise<Availability> {
    if (!board.backends.renode) return { available: false, reason: `board ${board.id} has no Renode platform (backends.renode)` };
    const { command, found } = resolveRenode(this.options.renodePath, this.options.env?.PATH);
    if (!found) return { available: false, reason: `Renode not found (${command}): ${RENODE_INSTALL_HINT}` };
    return { available: true };
  }

  async open(board: Board, options: { signal?: AbortSignal } = {}): Promise<Device> {
    throwIfCancelled(options.signal, 'open');
    const availability = await this.availability(board);
    if (!availability.available) throw new BackendError('unavailable', `board ${board.id} cannot run on Renode: ${availability.reason}`);
    const { found } = resolveRenode(this.options.renodePath, this.options.env?.PATH);
    return new RenodeDevice(board, found!, this.options);
  }
}

/** Asks the OS for a free TCP port on loopback. Renode binds it on 0.0.0.0 a moment later. */
export function freeTcpPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen({ port: 0, host: '127.0.0.1' }, () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

interface Session {
  process: EmulatorProcess;
  monitor: RenodeMonitor;
  socket: net.Socket;
  socketClosed: Promise<void>;
  releasedAtMs?: number;
  /** A CPU abort seen in the log, with when (relative to release). */
  crash?: { message: string; atNanos: number };
  /**
   * Set once a crashed run has drained the socket: the core is halted and the run is over, so
   * bytes arriving later are counted as dropped, not delivered. Cleared by `reset`.
   */
  uartEnded?: boolean;
}

/** Which error kind a failed setup step is: the platform is the board's, the ELF the user's. */
const setupFailureKind: Record<SetupStep, BackendErrorKind> = {
  machine: 'flash-failed',
  platform: 'unavailable',
  elf: 'bad-image',
  terminal: 'flash-failed',
  connect: 'flash-failed',
};

class RenodeDevice implements Device {
  readonly timeBase = 'wall' as const;
  private readonly uart: SocketUart;
  private readonly changeWaiters = new Set<() => void>();
  /** Called for every UART chunk delivered (the crash drain restarts its quiet timer). */
  private readonly dataWaiters = new Set<() => void>();
  private readonly clock: Clock;
  private readonly workDir: string;
  private elfPath: string | undefined;
  private session: Session | undefined;
  private finalStop: RunStop | undefined;
  private running = false;
  private abortActiveRun: ((err: BackendError) => void) | undefined;
  private closed = false;

  constructor(
    readonly board: Board,
    private readonly renode: string,
    private readonly options: RenodeBackendOptions,
  ) {
    this.clock = options.clock;
    this.uart = new SocketUart(this.clock);
    renodeKeysFor(board);
    this.workDir = makeScratchDir('hbr', options.tempDir ?? defaultScratchParent());
  }

  /** Bytes that arrived while the core was in reset (sent before the reset, delivered after it). */
  get droppedUartBytes(): number {
    return this.uart.droppedBytes;
  }

  /** The Renode process of the current session, for tests and diagnostics. */
  get pid(): number | undefined {
    return this.session?.process.pid;
  }

  async flash(image: FirmwareImage, options: { signal?: AbortSignal } = {}): Promise<void> {
    this.assertOpen('flash');
    throwIfCancelled(options.signal, 'flash');
    checkImageForBoard(image, this.board);
    await this.endSession();
    this.elfPath = path.join(this.workDir, 'fw.elf');
    writeFileSync(this.elfPath, image.bytes, { mode: 0o600 });
    this.finalStop = undefined;
    try {
      await this.startSession(options.signal);
    } catch (err) {
      this.elfPath = undefined;
      throw err;
    }
  }

  onUart(listener: (chunk: UartChunk) => void): () => void {
    return this.uart.subscribe(listener);
  }

  async run(durationNanos: number, options: RunOptions = {}): Promise<RunStop> {
    this.assertOpen('run');
    throwIfCancelled(options.signal, 'run');
    if (!this.elfPath) throw new BackendError('bad-image', 'run called before flash: no firmware loaded');
    if (this.finalStop) return this.finalStop;
    if (this.running) throw new BackendError('internal', `run called on ${this.board.id} while another run is in progress`);
    this.running = true;
    try {
      const session = this.session ?? (await this.startSession(options.signal));
      if (session.releasedAtMs === undefined) {
        // Set before sending: UART bytes may arrive before the prompt that follows `start`.
        session.releasedAtMs = this.clock.nowMs();
        await this.command(session, 'start', 'internal');
      }
      return await this.runFor(session, durationNanos, options);
    } catch (err) {
      // A run cancelled by its own signal leaves nothing running. One ended by `reset` or `close`
      // does not end the session here: `reset` goes on using it, `close` ends it itself.
      if (err instanceof BackendError && err.kind === 'cancelled' && options.signal?.aborted) await this.endSession();
      throw err;
    } finally {
      this.running = false;
    }
  }

  async writeUart(bytes: Uint8Array): Promise<void> {
    this.assertOpen('writeUart');
    const socket = this.session?.socket;
    if (!socket) throw new BackendError('serial-lost', `no Renode session for ${this.board.id}: flash first`);
    await writeUartSocket(socket, bytes, 'Renode');
  }

  async reset(): Promise<void> {
    this.assertOpen('reset');
    this.abortActiveRun?.(new BackendError('cancelled', 'run ended because the device was reset'));
    this.finalStop = undefined;
    const session = this.session;
    const elfPath = this.elfPath;
    if (!session || !elfPath) return; // the next run starts a fresh Renode
    if (session.process.hasExited) {
      await this.endSession();
      return;
    }
    // From here the core counts as in reset: bytes still in flight from before are counted as
    // dropped rather than delivered with the next boot's timestamps.
    session.releasedAtMs = undefined;
    session.crash = undefined;
    session.uartEnded = false;
    // Machine.Reset zeroes memory and keeps the paused state; nobody registered a `reset`
    // macro, so the ELF is loaded again explicitly.
    await this.command(session, 'pause', 'reset-failed');
    await this.command(session, 'machine Reset', 'reset-failed');
    await this.command(session, `sysbus LoadELF ${pathToken(elfPath)}`, 'reset-failed');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.endSession();
    this.uart.clear();
    rmSync(this.workDir, { recursive: true, force: true });
  }

  private async startSession(signal: AbortSignal | undefined): Promise<Session> {
    const elfPath = this.elfPath;
    if (!elfPath) throw new BackendError('bad-image', 'no firmware loaded');
    const child = new EmulatorProcess(this.renode, RENODE_ARGS, {
      clock: this.clock,
      killGraceMs: this.options.killGraceMs ?? 3000,
      stdin: 'pipe',
      cwd: this.workDir,
      env: this.options.env as Record<string, string> | undefined,
    });
    const monitor = new RenodeMonitor(child, this.clock);
    const abandon = async (err: unknown): Promise<never> => {
      await child.stop();
      throw err;
    };
    const onAbort = () => void child.stop();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      try {
        await monitor.ready(this.options.startTimeoutMs ?? 60_000);
      } catch (err) {
        throw this.monitorFailure(err, child, 'flash-failed', 'starting Renode');
      }
      throwIfCancelled(signal, 'flash');
      const port = await this.setUp(child, monitor, elfPath, signal);
      throwIfCancelled(signal, 'flash');
      const socket = await this.connectUart(child, port);
      const session: Session = { process: child, monitor, socket, socketClosed: new Promise((resolve) => socket.once('close', () => resolve())) };
      this.attach(session);
      this.session = session;
      return session;
    } catch (err) {
      return abandon(signal?.aborted ? new BackendError('cancelled', 'flash cancelled while Renode was starting', { cause: signal.reason }) : err);
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Runs the setup commands; retries the terminal on another port if the chosen one was taken. */
  private async setUp(child: EmulatorProcess, monitor: RenodeMonitor, elfPath: string, signal: AbortSignal | undefined): Promise<number> {
    const pickPort = this.options.pickPort ?? freeTcpPort;
    let port = await pickPort();
    const commands = renodeSetupCommands(this.board, elfPath, port);
    for (const { step, command } of commands) {
      throwIfCancelled(signal, 'flash');
      if (step === 'terminal') {
        for (let attempt = 1; ; attempt++) {
          const terminalCommand = command.replace(/CreateServerSocketTerminal \d+/, `CreateServerSocketTerminal ${port}`);
          try {
            await monitor.execute(terminalCommand, this.commandTimeout);
            break;
          } catch (err) {
            const inUse = err instanceof RenodeCommandError && /AddressAlreadyInUse|Address already in use/.test(err.output.join('\n'));
            if (!inUse || attempt >= PORT_ATTEMPTS) throw this.setupFailure(err, child, step, attempt);
            port = await pickPort();
          }
        }
        continue;
      }
      try {
        await monitor.execute(command, this.commandTimeout);
      } catch (err) {
        throw this.setupFailure(err, child, step, 1);
      }
    }
    return port;
  }

  private setupFailure(err: unknown, child: EmulatorProcess, step: SetupStep, attempts: number): BackendError {
    if (!(err instanceof RenodeCommandError)) return this.monitorFailure(err, child, 'flash-failed', `setting up the ${step}`);
    const what = {
      machine: 'create the machine',
      platform: `load the platform ${this.board.backends.renode?.platform} for ${this.board.id}`,
      elf: 'load the firmware ELF',
      terminal: attempts > 1 ? `create the UART socket terminal (${attempts} ports tried)` : 'create the UART socket terminal',
      connect: `connect ${this.board.backends.renode?.uart} to the UART terminal`,
    }[step];
    return new BackendError(setupFailureKind[step], `Renode could not ${what}: ${err.message}`, { outputTail: err.output.join('\n') || child.outputTail() });
  }

  private monitorFailure(err: unknown, child: EmulatorProcess, kind: BackendErrorKind, doing: string): BackendError {
    if (err instanceof BackendError) return err;
    if (err instanceof RenodeMonitorGone) {
      return new BackendError(kind, `${doing}: ${err.message}`, { exitCode: child.exit?.exitCode, outputTail: child.outputTail(), cause: err });
    }
    if (err instanceof RenodeCommandError) return new BackendError(kind, `${doing}: ${err.message}`, { outputTail: err.output.join('\n'), cause: err });
    return new BackendError('internal', `${doing}: ${(err as Error).message}`, { outputTail: child.outputTail(), cause: err });
  }

  private get commandTimeout(): number {
    return this.options.commandTimeoutMs ?? 30_000;
  }

  private async command(session: Session, command: string, kind: BackendErrorKind): Promise<string[]> {
    try {
      return await session.monitor.execute(command, this.commandTimeout);
    } catch (err) {
      throw this.monitorFailure(err, session.process, kind, `Renode command \`${command}\``);
    }
  }

  private async connectUart(child: EmulatorProcess, port: number): Promise<net.Socket> {
    const timeoutMs = this.commandTimeout;
    return new Promise<net.Socket>((resolve, reject) => {
      // Renode listens on 0.0.0.0; we connect over loopback.
      const socket = net.createConnection({ host: '127.0.0.1', port });
      const timer = this.clock.setTimeout(() => {
        socket.destroy();
        reject(new BackendError('flash-failed', `timed out after ${timeoutMs} ms connecting to Renode's UART terminal on port ${port}`, { outputTail: child.outputTail() }));
      }, timeoutMs);
      socket.once('error', (err) => {
        this.clock.clearTimeout(timer);
        reject(new BackendError('flash-failed', `could not connect to Renode's UART terminal on port ${port}: ${err.message}`, { cause: err, outputTail: child.outputTail() }));
      });
      socket.once('connect', () => {
        this.clock.clearTimeout(timer);
        socket.removeAllListeners('error');
        socket.on('error', () => undefined); // a closing Renode resets the connection; the exit path reports it
        resolve(socket);
      });
    });
  }

  private attach(session: Session) {
    this.uart.capture(
      session.socket,
      // Undefined (the bytes are counted as dropped) while held in reset, once a crashed run has
      // drained, and once the session is over.
      () => (this.session === session && !session.uartEnded ? session.releasedAtMs : undefined),
      () => {
        for (const waiter of [...this.dataWaiters]) waiter();
        this.notify();
      },
    );
    session.monitor.onLog((line) => {
      const abort = cpuAbortOf(line);
      if (abort && !session.crash && session.releasedAtMs !== undefined) {
        session.crash = { message: abort, atNanos: this.elapsedNanos(session) };
        this.notify();
      }
    });
    void session.process.exited.then(() => this.notify());
  }

  private elapsedNanos(session: Session): number {
    return this.uart.elapsedNanos(session.releasedAtMs);
  }

  private notify() {
    for (const waiter of [...this.changeWaiters]) waiter();
  }

  private async runFor(session: Session, durationNanos: number, options: RunOptions): Promise<RunStop> {
    const stop = await waitForWallRun({
      clock: this.clock,
      durationNanos,
      elapsedNanos: () => this.elapsedNanos(session),
      signal: options.signal,
      until: options.until,
      check: () => {
        if (session.crash) return { reason: 'crashed', message: session.crash.message, elapsedNanos: session.crash.atNanos };
        if (session.process.hasExited && this.session === session) {
          const exit = session.process.exit!;
          return new BackendError('internal', `Renode exited unexpectedly (${exit.exitCode !== undefined ? `status ${exit.exitCode}` : `signal ${exit.signal}`}) while the firmware ran`, {
            exitCode: exit.exitCode,
            outputTail: session.process.outputTail(),
          });
        }
        return undefined;
      },
      watch: (onChange) => {
        this.changeWaiters.add(onChange);
        return () => this.changeWaiters.delete(onChange);
      },
      onActive: (end) => (this.abortActiveRun = end),
    });
    if (stop.reason !== 'crashed') return stop;
    await this.drainAfterCrash(session, options.signal);
    // Sticky until reset or flash, like the QEMU backend's crash.
    this.finalStop = stop;
    return stop;
  }

  /**
   * After a CPU abort: keeps reading the UART socket until it has been quiet for `drainQuietMs`
   * (bounded by `drainTimeoutMs`), then ends the capture of this boot so later bytes are counted
   * as dropped. Reset and close end the drain as they end a run (the run then rejects with their
   * error), and so does the run's signal (`cancelled`). The crash's `elapsedNanos` stays the time
   * the abort line was read; bytes drained after it carry their later arrival stamps.
   */
  private async drainAfterCrash(session: Session, signal: AbortSignal | undefined): Promise<void> {
    const ended = new AbortController();
    const end = (err: BackendError) => ended.abort(err);
    const onRunAbort = () => end(new BackendError('cancelled', 'run cancelled', { cause: signal?.reason }));
    this.abortActiveRun = end;
    if (signal?.aborted) onRunAbort();
    signal?.addEventListener('abort', onRunAbort, { once: true });
    try {
      await waitForUartQuiet({
        clock: this.clock,
        quietMs: this.options.drainQuietMs ?? RENODE_DRAIN_QUIET_MS,
        timeoutMs: this.options.drainTimeoutMs ?? RENODE_DRAIN_TIMEOUT_MS,
        onActivity: (listener) => {
          this.dataWaiters.add(listener);
          return () => this.dataWaiters.delete(listener);
        },
        closed: session.socketClosed,
        signal: ended.signal,
      });
    } finally {
      signal?.removeEventListener('abort', onRunAbort);
      if (this.abortActiveRun === end) this.abortActiveRun = undefined;
    }
    if (ended.signal.aborted) throw ended.signal.reason as BackendError;
    session.uartEnded = true;
  }

  private async endSession(): Promise<void> {
    const session = this.session;
    this.session = undefined;
    this.abortActiveRun?.(new BackendError('cancelled', 'run ended because the device was reset or closed'));
    if (!session) return;
    // The socket stays open until Renode is gone: bytes still in flight are read and counted as
    // dropped (the session is over, so the capture no longer delivers them), not thrown away.
    if (!session.process.hasExited) {
      // Ask politely first (Renode tidies up its sockets), then signals.
      try {
        session.process.write('quit\n');
        await Promise.race([
          session.process.exited,
          new Promise((resolve) => {
            const timer = this.clock.setTimeout(() => resolve(undefined), this.options.quitTimeoutMs ?? 3000);
            void session.process.exited.then(() => this.clock.clearTimeout(timer));
          }),
        ]);
      } catch {
        // stdin already closed: fall through to the signals.
      }
    }
    await session.process.stop();
    // Renode's exit closes its end of the socket; bounded all the same, as every wait here.
    let timer: TimerHandle | undefined;
    await Promise.race([
      session.socketClosed,
      new Promise<void>((resolve) => (timer = this.clock.setTimeout(resolve, this.options.drainTimeoutMs ?? RENODE_DRAIN_TIMEOUT_MS))),
    ]);
    if (timer) this.clock.clearTimeout(timer);
    session.socket.destroy();
  }

  private assertOpen(what: string) {
    if (this.closed) throw new BackendError('internal', `${what} on a closed Renode device for ${this.board.id}`);
  }
}
