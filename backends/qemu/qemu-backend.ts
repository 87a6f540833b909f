import { rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { execa } from 'execa';
import type { Board } from '../../boards/board-schema.js';
import type { Clock } from '../../core/clock.js';
import {
  type Availability,
  type Backend,
  BackendError,
  type Device,
  type DeviceDebug,
  type FirmwareImage,
  type RunOptions,
  type RunStop,
  throwIfCancelled,
  type UartChunk,
} from '../backend.js';
import { checkImageForBoard } from '../image-check.js';
import { EmulatorProcess } from '../process/emulator-process.js';
import { findExecutable } from '../process/find-executable.js';
import { defaultScratchParent, makeScratchDir } from '../process/scratch-dir.js';
import { DEFAULT_QEMU_BINARY, describeQemuGuestClock, qemuBackendCommand, qemuGuestClock, qemuKeysFor } from './qemu-command.js';
import { classifyRunExit, startupFailure } from './qemu-outcome.js';
import { connectGdbServer, socketGdbStream } from '../socket-gdb-stream.js';
import { SocketUart, writeUartSocket } from '../socket-uart.js';
import { waitForWallRun } from '../wall-run.js';

/**
 * The QEMU backend: boards with `backends.qemu.machine` run in `qemu-system-arm`.
 *
 * - `flash` writes the ELF to a private temp dir and starts QEMU with serial0 on a unix socket
 *   it listens on with `wait=on`: QEMU blocks for our connection before it loads the kernel,
 *   so the guest cannot execute, which is our "held in reset".
 * - the first `run` connects to that socket, which releases the guest; UART timestamps count
 *   from that connect, in host time (`timeBase: 'wall'`, see docs/backends/qemu.md for why
 *   `-icount` does not make them simulated).
 * - `reset` ends the QEMU process; the next `run` starts a fresh one (QEMU has no monitor here,
 *   and a fresh process is the only reset that also clears RAM and peripheral state).
 * - a semihosting exit becomes `exited`, a Lockup becomes `crashed`; cancel and close end the
 *   process (SIGTERM, SIGKILL after `killGraceMs`).
 */
export interface QemuBackendOptions {
  /** qemu-system-arm executable: a name looked up on PATH, or a path. */
  qemuBinary?: string;
  /** Passes `-icount shift=N,align=off,sleep=off` for every board, over the board files' `qemu.icount`. Time stays 'wall' (see docs/backends/qemu.md). */
  icountShift?: number;
  /** Host clock of every timeout (injected: the system clock in production). */
  clock: Clock;
  /** Bound on QEMU printing "waiting for connection", host ms. Measured 20-40 ms; default 10 s. */
  startTimeoutMs?: number;
  /** SIGTERM grace before SIGKILL, host ms. QEMU exits on SIGTERM in ~4 ms; default 2 s. */
  killGraceMs?: number;
  /** How long to wait for the socket's last bytes after QEMU exits, host ms; default 1 s. */
  drainTimeoutMs?: number;
  /**
   * Parent of the per-device scratch dir `hbq-<pid>-<start>-XXXXXX` (kept short: unix socket paths
   * are limited to 107 bytes). Default: the OS temp dir; a restart removes a crashed process's ones.
   */
  tempDir?: string;
}

const INSTALL_HINT = 'install qemu-system-arm (apt-get install -y qemu-system-arm)';

export class QemuBackend implements Backend {
  readonly name = 'qemu' as const;
  private machines: Promise<Set<string> | undefined> | undefined;

  constructor(private readonly options: QemuBackendOptions) {}

  private get binary(): string {
    return this.options.qemuBinary ?? DEFAULT_QEMU_BINARY;
  }

  async availability(board: Board): Promise<Availability> {
    const machine = board.backends.qemu?.machine;
    if (!machine) return { available: false, reason: `board ${board.id} has no QEMU machine (backends.qemu)` };
    const resolved = findExecutable(this.binary);
    if (!resolved) return { available: false, reason: `${this.binary} not found: ${INSTALL_HINT}` };
    const machines = await this.knownMachines(resolved);
    if (machines && !machines.has(machine)) {
      return { available: false, reason: `${resolved} does not model machine ${machine} (see qemu-system-arm -M help)` };
    }
    return { available: true };
  }

  async open(board: Board, options: { signal?: AbortSignal } = {}): Promise<Device> {
    throwIfCancelled(options.signal, 'open');
    const availability = await this.availability(board);
    if (!availability.available) throw new BackendError('unavailable', `board ${board.id} cannot run on QEMU: ${availability.reason}`);
    return new QemuDevice(board, findExecutable(this.binary) ?? this.binary, this.options);
  }

  /** `qemu-system-arm -M help`, once per backend; undefined when it cannot be listed (then we do not second-guess). */
  private knownMachines(binary: string): Promise<Set<string> | undefined> {
    this.machines ??= execa(binary, ['-M', 'help'], { reject: false, timeout: 10_000 }).then((result) => {
      if (result.exitCode !== 0) return undefined;
      const names = String(result.stdout)
        .split('\n')
        .slice(1)
        .map((line) => line.trim().split(/\s+/)[0] ?? '')
        .filter(Boolean);
      return new Set(names);
    });
    return this.machines;
  }
}

/** One QEMU instance's connection, from spawn to exit. */
interface Session {
  process: EmulatorProcess;
  socket?: net.Socket;
  /** Host ms when the socket connected (reset release). */
  releasedAtMs?: number;
  /** Resolves when the socket has closed (all bytes delivered). */
  socketClosed?: Promise<void>;
}

class QemuDevice implements Device {
  readonly timeBase = 'wall' as const;
  /** The clock the guest's timers follow: `host`, or `icount shift=N (...)` from the board file or option. */
  readonly clockSource: string;
  private readonly uart: SocketUart;
  private readonly dataWaiters = new Set<() => void>();
  private readonly clock: Clock;
  private readonly workDir: string;
  private kernelPath: string | undefined;
  private session: Session | undefined;
  /** How the last run ended when the firmware itself ended it; sticks until reset or flash. */
  private finalStop: RunStop | undefined;
  private pendingTx: Uint8Array[] = [];
  /** Ends the run in progress, if any (reset and close must not leave a run waiting). */
  private abortActiveRun: ((err: BackendError) => void) | undefined;
  private running = false;
  private closed = false;

  /**
   * The debug capability: QEMU restarted with `-S -gdb` (the CPU stopped at reset), the UART
   * connected, and QEMU's own gdbstub as the stream. After a detach, `run` captures on.
   */
  readonly debug: DeviceDebug = {
    attach: async (options = {}) => {
      this.assertOpen('attaching a debugger');
      throwIfCancelled(options.signal, 'attaching a debugger');
      if (!this.kernelPath) throw new BackendError('bad-image', `attaching a debugger to ${this.board.id} before flash: no firmware loaded`);
      if (this.running) throw new BackendError('internal', `attaching a debugger to ${this.board.id} while a run is in progress`);
      await this.endSession();
      this.finalStop = undefined;
      const gdbSocketPath = path.join(this.workDir, 'gdb.sock');
      rmSync(gdbSocketPath, { force: true });
      const session = await this.startSession(options.signal, gdbSocketPath);
      await this.release(session, options.signal);
      const socket = await connectGdbServer(
        { path: gdbSocketPath },
        { clock: this.clock, timeoutMs: this.options.startTimeoutMs ?? 10_000, what: 'qemu-system-arm', outputTail: () => session.process.outputTail(), signal: options.signal },
      );
      return socketGdbStream(socket);
    },
  };

  constructor(
    readonly board: Board,
    private readonly binary: string,
    private readonly options: QemuBackendOptions,
  ) {
    this.clock = options.clock;
    this.uart = new SocketUart(this.clock);
    qemuKeysFor(board);
    this.clockSource = describeQemuGuestClock(qemuGuestClock(board, options));
    const parent = options.tempDir ?? defaultScratchParent();
    this.workDir = makeScratchDir('hbq', parent.length > 60 ? '/tmp' : parent);
  }

  async flash(image: FirmwareImage, options: { signal?: AbortSignal } = {}): Promise<void> {
    this.assertOpen('flash');
    throwIfCancelled(options.signal, 'flash');
    checkImageForBoard(image, this.board);
    await this.endSession();
    this.kernelPath = path.join(this.workDir, 'fw.elf');
    writeFileSync(this.kernelPath, image.bytes, { mode: 0o600 });
    this.finalStop = undefined;
    // Start QEMU now, so a QEMU that cannot start fails in flash. With wait=on it blocks for our
    // connection while creating serial0, before it loads the kernel (measured: a missing kernel
    // is reported only after the connect), so the core cannot run yet.
    try {
      await this.startSession(options.signal);
    } catch (err) {
      this.kernelPath = undefined;
      throw err;
    }
  }

  onUart(listener: (chunk: UartChunk) => void): () => void {
    return this.uart.subscribe(listener);
  }

  async run(durationNanos: number, options: RunOptions = {}): Promise<RunStop> {
    this.assertOpen('run');
    throwIfCancelled(options.signal, 'run');
    if (!this.kernelPath) throw new BackendError('bad-image', 'run called before flash: no firmware loaded');
    if (this.finalStop) return this.finalStop;
    if (this.running) throw new BackendError('internal', `run called on ${this.board.id} while another run is in progress`);
    this.running = true;
    try {
      this.session ??= await this.startSession(options.signal);
      if (this.session.releasedAtMs === undefined) await this.release(this.session, options.signal);
      return await this.runFor(this.session, durationNanos, options);
    } catch (err) {
      if (err instanceof BackendError && err.kind === 'cancelled') await this.endSession();
      // QEMU loads the kernel only after the UART client connects (wait=on blocks while the
      // chardev is created, before machine init), so load failures surface here, not in flash.
      if (err instanceof BackendError && err.kind === 'bad-image') this.kernelPath = undefined;
      throw err;
    } finally {
      this.running = false;
    }
  }

  async writeUart(bytes: Uint8Array): Promise<void> {
    this.assertOpen('writeUart');
    const socket = this.session?.socket;
    // Before release there is no connection yet; QEMU would queue the bytes for the guest's
    // receiver anyway, so we queue them and send them on connect.
    if (!socket) {
      this.pendingTx.push(bytes.slice());
      return;
    }
    await writeUartSocket(socket, bytes, 'QEMU');
  }

  async reset(): Promise<void> {
    this.assertOpen('reset');
    await this.endSession();
    this.finalStop = undefined;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.endSession();
    this.uart.clear();
    rmSync(this.workDir, { recursive: true, force: true });
  }

  /** Bytes that arrived after reset/cancel/close ended their session (counted, not delivered). */
  get droppedUartBytes(): number {
    return this.uart.droppedBytes;
  }

  /** The QEMU process of the current session, for tests and diagnostics. */
  get pid(): number | undefined {
    return this.session?.process.pid;
  }

  private async startSession(signal: AbortSignal | undefined, gdbSocketPath?: string): Promise<Session> {
    const kernelPath = this.kernelPath;
    if (!kernelPath) throw new BackendError('bad-image', 'no firmware loaded');
    const socketPath = path.join(this.workDir, 'uart.sock');
    rmSync(socketPath, { force: true });
    const command = qemuBackendCommand(this.board, kernelPath, socketPath, { ...this.options, qemuBinary: this.binary, gdbSocketPath });
    const process = new EmulatorProcess(command.file, command.args, { clock: this.clock, killGraceMs: this.options.killGraceMs ?? 2000 });
    const session: Session = { process };
    this.session = session;
    const timeoutMs = this.options.startTimeoutMs ?? 10_000;
    await new Promise<void>((resolve, reject) => {
      let settled = false;
      const finish = (err?: BackendError) => {
        if (settled) return;
        settled = true;
        unsubscribe();
        this.clock.clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else resolve();
      };
      const unsubscribe = process.onLine((line) => {
        if (line.includes('QEMU waiting for connection on:')) finish();
      });
      const timer = this.clock.setTimeout(
        () =>
          finish(
            new BackendError('flash-failed', `timed out after ${timeoutMs} ms waiting for qemu-system-arm to print "QEMU waiting for connection on:"`, {
              outputTail: process.outputTail(),
            }),
          ),
        timeoutMs,
      );
      const onAbort = () => finish(new BackendError('cancelled', 'flash cancelled while QEMU was starting', { cause: signal?.reason }));
      signal?.addEventListener('abort', onAbort, { once: true });
      void process.exited.then((exit) => finish(startupFailure(exit, process.outputTail())));
    }).catch(async (err: unknown) => {
      await this.endSession();
      throw err;
    });
    return session;
  }

  /** Connects to QEMU's serial socket: the guest starts executing at this moment. */
  private async release(session: Session, signal: AbortSignal | undefined): Promise<void> {
    const socketPath = path.join(this.workDir, 'uart.sock');
    const socket = await new Promise<net.Socket>((resolve, reject) => {
      const s = net.createConnection({ path: socketPath });
      const fail = (err: Error) =>
        reject(new BackendError('serial-lost', `could not connect to QEMU's UART socket ${socketPath}: ${err.message}`, { cause: err, outputTail: session.process.outputTail() }));
      s.once('error', fail);
      s.once('connect', () => {
        s.off('error', fail);
        resolve(s);
      });
    });
    throwIfCancelled(signal, 'run');
    session.releasedAtMs = this.clock.nowMs();
    session.socket = socket;
    session.socketClosed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => {
      // A reset or exit closes the socket under us; the exit path reports what happened.
    });
    this.uart.capture(
      socket,
      // Undefined once the session was ended (reset, cancel, close) with these bytes in flight: dropped.
      () => (this.session === session ? session.releasedAtMs : undefined),
      () => {
        for (const waiter of this.dataWaiters) waiter();
      },
    );
    for (const bytes of this.pendingTx.splice(0)) socket.write(bytes);
  }

  private elapsedNanos(session: Session): number {
    return this.uart.elapsedNanos(session.releasedAtMs);
  }

  private runFor(session: Session, durationNanos: number, options: RunOptions): Promise<RunStop> {
    return waitForWallRun({
      clock: this.clock,
      durationNanos,
      elapsedNanos: () => this.elapsedNanos(session),
      signal: options.signal,
      until: options.until,
      watch: (onData, end) => {
        this.dataWaiters.add(onData);
        void session.process.exited.then(async (exit) => {
          if (exit.stoppedByUs || this.session !== session) return;
          const exitNanos = this.elapsedNanos(session);
          await this.drained(session);
          // The whole kept output: an M4's register dump (with FPU registers) pushes the fatal line up.
          const outcome = classifyRunExit(exit, session.process.outputTail(160));
          if (outcome.kind === 'error') {
            end(outcome.error);
            return;
          }
          this.finalStop =
            outcome.kind === 'crashed'
              ? { reason: 'crashed', message: outcome.message, elapsedNanos: exitNanos }
              : { reason: 'exited', exitCode: outcome.exitCode, elapsedNanos: exitNanos };
          end(this.finalStop);
        });
        return () => this.dataWaiters.delete(onData);
      },
      onActive: (end) => (this.abortActiveRun = end),
    });
  }

  /** Waits (bounded) until the socket has delivered its last bytes after QEMU exited. */
  private async drained(session: Session): Promise<void> {
    if (!session.socketClosed) return;
    const timeoutMs = this.options.drainTimeoutMs ?? 1000;
    let timer: ReturnType<Clock['setTimeout']> | undefined;
    await Promise.race([session.socketClosed, new Promise<void>((resolve) => (timer = this.clock.setTimeout(resolve, timeoutMs)))]);
    if (timer) this.clock.clearTimeout(timer);
  }

  private async endSession(): Promise<void> {
    const session = this.session;
    this.session = undefined;
    this.abortActiveRun?.(new BackendError('cancelled', `run ended because the device was reset or closed`));
    if (!session) return;
    // Stop QEMU first and read the socket to its end, so bytes still in flight are counted as
    // dropped (the data handler sees the session is over) instead of vanishing with the socket.
    await session.process.stop();
    await this.drained(session);
    session.socket?.destroy();
  }

  private assertOpen(what: string) {
    if (this.closed) throw new BackendError('internal', `${what} on a closed QEMU device for ${this.board.id}`);
  }
}
