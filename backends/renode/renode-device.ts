import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Board } from '../../boards/board-schema.js';
import type { Clock } from '../../core/clock.js';
import {
  BackendError,
  type BackendErrorKind,
  type Device,
  type DeviceDebug,
  type FirmwareImage,
  type RunOptions,
  type RunStop,
  throwIfCancelled,
  type UartChunk,
} from '../backend.js';
import { checkImageForBoard } from '../image-check.js';
import { defaultScratchParent, makeScratchDir } from '../process/scratch-dir.js';
import { connectGdbServer, socketGdbStream } from '../socket-gdb-stream.js';
import { SocketUart, writeUartSocket } from '../socket-uart.js';
import { freeTcpPort } from './free-tcp-port.js';
import { waitForWallRun } from '../wall-run.js';
import type { RenodeBackendOptions } from './renode-backend-options.js';
import { pathToken, renodeKeysFor } from './renode-command.js';
import { cpuAbortOf } from './renode-log.js';
import { type RenodeSession, type RenodeSessionContext, renodeCommand, startRenodeSession, stopRenodeSession } from './renode-session.js';
import { RENODE_DRAIN_QUIET_MS, RENODE_DRAIN_TIMEOUT_MS, waitForUartQuiet } from './wait-for-uart-quiet.js';

/**
 * One board in Renode (see `RenodeBackendOptions` for the model): flash starts a session with the
 * core held in reset, run releases it and watches for a CPU abort, reset reloads the ELF.
 */
export class RenodeDevice implements Device {
  readonly timeBase = 'wall' as const;
  private readonly uart: SocketUart;
  private readonly changeWaiters = new Set<() => void>();
  /** Called for every UART chunk delivered (the crash drain restarts its quiet timer). */
  private readonly dataWaiters = new Set<() => void>();
  private readonly clock: Clock;
  private readonly workDir: string;
  private readonly sessionContext: RenodeSessionContext;
  private elfPath: string | undefined;
  private session: RenodeSession | undefined;
  private finalStop: RunStop | undefined;
  private running = false;
  private abortActiveRun: ((err: BackendError) => void) | undefined;
  private closed = false;

  /**
   * The debug capability: a fresh Renode session with the machine set up, then Renode's GDB server
   * (`machine StartGdbServer <port> true`: the emulation starts when GDB connects, the core waits
   * for GDB's continue). UART time counts from the server's start. After a detach, `run` captures on.
   */
  readonly debug: DeviceDebug = {
    attach: async (options = {}) => {
      this.assertOpen('attaching a debugger');
      throwIfCancelled(options.signal, 'attaching a debugger');
      if (!this.elfPath) throw new BackendError('bad-image', `attaching a debugger to ${this.board.id} before flash: no firmware loaded`);
      if (this.running) throw new BackendError('internal', `attaching a debugger to ${this.board.id} while a run is in progress`);
      await this.endSession();
      this.finalStop = undefined;
      const session = await this.startSession(options.signal);
      const port = await (this.options.pickPort ?? freeTcpPort)();
      session.releasedAtMs = this.clock.nowMs();
      await this.command(session, `machine StartGdbServer ${port} true`, 'unavailable');
      const socket = await connectGdbServer(
        { host: '127.0.0.1', port },
        { clock: this.clock, timeoutMs: this.options.commandTimeoutMs ?? 30_000, what: 'Renode', outputTail: () => session.process.outputTail(), signal: options.signal },
      );
      return socketGdbStream(socket);
    },
  };

  constructor(
    readonly board: Board,
    renode: string,
    private readonly options: RenodeBackendOptions,
  ) {
    this.clock = options.clock;
    this.uart = new SocketUart(this.clock);
    renodeKeysFor(board);
    this.workDir = makeScratchDir('hbr', options.tempDir ?? defaultScratchParent());
    this.sessionContext = { board, renode, options, clock: this.clock, workDir: this.workDir };
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

  private async startSession(signal: AbortSignal | undefined): Promise<RenodeSession> {
    const elfPath = this.elfPath;
    if (!elfPath) throw new BackendError('bad-image', 'no firmware loaded');
    return startRenodeSession(this.sessionContext, elfPath, signal, (session) => {
      this.attach(session);
      this.session = session;
    });
  }

  private async command(session: RenodeSession, command: string, kind: BackendErrorKind): Promise<string[]> {
    return renodeCommand(this.sessionContext, session, command, kind);
  }

  private attach(session: RenodeSession) {
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

  private elapsedNanos(session: RenodeSession): number {
    return this.uart.elapsedNanos(session.releasedAtMs);
  }

  private notify() {
    for (const waiter of [...this.changeWaiters]) waiter();
  }

  private async runFor(session: RenodeSession, durationNanos: number, options: RunOptions): Promise<RunStop> {
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
  private async drainAfterCrash(session: RenodeSession, signal: AbortSignal | undefined): Promise<void> {
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
    await stopRenodeSession(this.sessionContext, session);
  }

  private assertOpen(what: string) {
    if (this.closed) throw new BackendError('internal', `${what} on a closed Renode device for ${this.board.id}`);
  }
}
