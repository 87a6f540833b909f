import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Board } from '../../boards/board-schema.js';
import type { Clock, TimerHandle } from '../../core/clock.js';
import { loadableSegments } from '../../core/elf.js';
import {
  BackendError,
  type Device,
  type DeviceDebug,
  type FirmwareImage,
  type GdbStream,
  NANOS_PER_MS,
  type RunOptions,
  type RunStop,
  throwIfCancelled,
  type UartChunk,
} from '../backend.js';
import { checkImageForBoard } from '../image-check.js';
import { UartFanout } from '../uart-fanout.js';
import type { BenchBoard } from './bench-file.js';
import { startProbeGdbServer } from './probe-gdb-server.js';
import { flashArgs, haltArgs, type ProbeStep, type ProbeTarget, releaseResetArgs, toolFailure } from './probe-commands.js';
import { runTool } from './run-tool.js';
import type { SerialLink } from './serial-link.js';

/** What the backend learns from a device: board health and exclusive use. */
export interface ProbeDeviceHooks {
  /** An infrastructure failure happened on this board. */
  failed(error: BackendError): Promise<void>;
  /** A run released reset and captured to its end. */
  succeeded(): Promise<void>;
  /** The device closed; the board is free again. */
  closed(): void;
}

export interface ProbeDeviceOptions {
  board: Board;
  attachment: BenchBoard;
  probe: ProbeTarget;
  /** The tool for `probe.kind`. */
  toolPath: string;
  toolEnv?: Record<string, string>;
  link: SerialLink;
  clock: Clock;
  hooks: ProbeDeviceHooks;
  /**
   * How a tool failure names the board: its id, and for an instance of a pool its bench-file entry
   * (`stm32f4-discovery (entry "right")`), so a quarantine reason names the kit (decision 0607).
   */
  label?: string;
}

/**
 * The shared image check (architecture, ET_EXEC, segments inside the memory map), plus what is
 * particular to a probe: it programs flash only, so every byte the image carries must load into
 * a flash region. An image built to load into RAM runs in an emulator but not from a probe.
 */
export function checkImageForProbe(board: Board, image: FirmwareImage): void {
  checkImageForBoard(image, board);
  const flash = board.mcu.memory.filter((r) => r.kind === 'flash');
  for (const s of loadableSegments(image.elf).filter((segment) => segment.fileSizeBytes > 0)) {
    const inside = flash.some((r) => s.paddr >= r.start && s.paddr + s.fileSizeBytes <= r.start + r.sizeBytes);
    if (!inside) {
      const regions = flash.map((r) => `${r.name} 0x${r.start.toString(16)}..0x${(r.start + r.sizeBytes).toString(16)}`).join(', ');
      throw new BackendError(
        'bad-image',
        `segment at 0x${s.paddr.toString(16)} (${s.fileSizeBytes} bytes) loads outside ${board.mcu.id}'s flash (${regions}); a probe programs flash only`,
      );
    }
  }
}

/**
 * A real board behind a probe. The order never loses the first line: `flash` leaves the core
 * halted; the serial port was opened when the device was; `run` flushes stale input, starts
 * delivering bytes and only THEN releases reset. Timestamps count from the moment the release
 * command is started, a lower bound on the real release (the tool's start-up, tens of ms, sits
 * between the two), so `atNanos` never claims a byte came before reset.
 */
export class ProbeDevice implements Device {
  readonly timeBase = 'wall' as const;
  /** The OS tty layer does not report overruns, and nothing here buffers without bound. */
  readonly droppedUartBytes = 0;
  /** Bytes that arrived while the core was held or before release: the previous firmware's, not counted as this run's. */
  discardedBeforeResetBytes = 0;

  readonly board: Board;
  private readonly uart = new UartFanout();
  private readonly tools = new Set<AbortController>();
  private readonly wakers = new Set<() => void>();
  private state: 'empty' | 'held' | 'running' = 'empty';
  /** The image last programmed, for probe-rs's reset (see `reset`). */
  private image: FirmwareImage | undefined;
  private releaseMs = 0;
  private lastAtNanos = 0;
  /** The reset-release command while it is still running. */
  private release: Promise<void> | undefined;
  private closed = false;
  /** The debugger's stream while one is attached, and its GDB server's end (the tool gone). */
  private debugStream: GdbStream | undefined;
  private debugEnded: Promise<void> | undefined;
  /** When the last debug session ended: the run after it counts its duration from there. */
  private runFromMs: number | undefined;

  /**
   * The debug capability: the probe tool's own GDB server (OpenOCD or `probe-rs gdb`, the same
   * probe selection as flashing) with the core reset and halted; its UART is delivered from the
   * attach on. When the debugger detaches the tool resumes the core, so `run` captures on from
   * there without releasing reset again, for its duration counted from the session's end.
   */
  readonly debug: DeviceDebug = {
    attach: (options = {}) => this.attachDebugger(options.signal),
  };

  constructor(private readonly options: ProbeDeviceOptions) {
    this.board = options.board;
    options.link.onData((bytes) => this.receive(bytes));
    options.link.onLost((error) => {
      void this.options.hooks.failed(error);
      this.wake();
    });
  }

  async flash(image: FirmwareImage, options: { signal?: AbortSignal } = {}): Promise<void> {
    this.assertUsable();
    throwIfCancelled(options.signal, 'flash');
    checkImageForProbe(this.board, image);
    await this.debuggerGone();
    this.image = undefined;
    this.state = 'empty';
    await this.program(image, options.signal);
    this.image = image;
    this.state = 'held';
  }

  onUart(listener: (chunk: UartChunk) => void): () => void {
    return this.uart.subscribe(listener);
  }

  async run(durationNanos: number, options: RunOptions = {}): Promise<RunStop> {
    this.assertUsable();
    throwIfCancelled(options.signal, 'run');
    if (this.state === 'empty') throw new BackendError('bad-image', 'run called before flash: no firmware loaded');
    await this.debuggerGone();
    if (this.state === 'held') await this.releaseReset(options.signal);

    const deadlineMs = (this.runFromMs ?? this.releaseMs) + Math.ceil(durationNanos / NANOS_PER_MS);
    const elapsedNanos = () => (this.options.clock.nowMs() - this.releaseMs) * NANOS_PER_MS;
    const reason = await this.waitFor(deadlineMs, options);
    const stoppedAtNanos = Math.max(elapsedNanos(), this.lastAtNanos);
    // The firmware may finish its hello before the release command exits: wait for the
    // command, so a failed reset is never reported as a successful run.
    if (this.release) await this.release;
    await this.options.hooks.succeeded();
    return { reason, elapsedNanos: stoppedAtNanos };
  }

  async writeUart(bytes: Uint8Array): Promise<void> {
    this.assertUsable();
    await this.options.link.write(bytes);
  }

  async reset(): Promise<void> {
    this.assertUsable();
    const image = this.image;
    if (!image) return;
    await this.debuggerGone();
    if (this.release) await this.release.catch(() => undefined);
    this.state = 'held';
    this.runFromMs = undefined;
    const args = haltArgs(this.options.probe);
    if (args) {
      await this.tool('halt', args, this.options.attachment.timeouts.resetMs, undefined);
    } else {
      // probe-rs cannot halt from its CLI; programming again leaves the core halted, so the
      // next run's capture holds nothing of the old firmware (docs/backends/probe.md).
      this.state = 'empty';
      await this.program(image, undefined);
      this.state = 'held';
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.uart.clear();
    // Tools get SIGTERM (then SIGKILL); wait for them so nothing outlives the device.
    for (const controller of this.tools) controller.abort(new Error('device closed'));
    this.wake();
    if (this.release) await this.release.catch(() => undefined);
    await this.debugStream?.close();
    await this.debuggerGone();
    await this.options.link.close();
    this.options.hooks.closed();
  }

  /** Starts the tool's GDB server for one debugger (see `debug`). */
  private async attachDebugger(signal: AbortSignal | undefined): Promise<GdbStream> {
    this.assertUsable();
    throwIfCancelled(signal, 'attaching a debugger');
    if (!this.image) throw new BackendError('bad-image', `attaching a debugger to ${this.board.id} before flash: no firmware loaded`);
    // One tool on a probe at a time: the previous debugger's server must be gone.
    await this.debugStream?.close();
    await this.debuggerGone();
    if (this.release) await this.release.catch(() => undefined);
    await this.options.link.flushInput().catch((error: unknown) => this.failWith(error));
    // The server resets the core: what the firmware prints from here on is this session's.
    this.releaseMs = this.options.clock.nowMs();
    this.lastAtNanos = 0;
    this.runFromMs = undefined;
    this.state = 'running';
    const { attachment, probe } = this.options;
    let server;
    try {
      server = await startProbeGdbServer({
        boardId: this.board.id,
        probe,
        toolPath: this.options.toolPath,
        toolEnv: this.options.toolEnv,
        clock: this.options.clock,
        startTimeoutMs: attachment.timeouts.resetMs,
        killGraceMs: attachment.timeouts.killGraceMs,
        signal,
      });
    } catch (error) {
      // Unknown core state: the next run releases reset afresh.
      this.state = 'held';
      return this.failWith(error);
    }
    const stream = server.stream;
    this.debugStream = stream;
    this.debugEnded = server.stopped.then(() => {
      if (this.debugStream === stream) this.debugStream = undefined;
      this.runFromMs = this.options.clock.nowMs();
    });
    return stream;
  }

  /** Resolves once the last debug session's GDB server has ended. */
  private async debuggerGone(): Promise<void> {
    await this.debugEnded?.catch(() => undefined);
  }

  /** Writes `image` to a temporary file and programs it with the probe tool; the core stays halted. */
  private async program(image: FirmwareImage, signal: AbortSignal | undefined) {
    // The tools read a file; the image lives in memory (it may never have had a path).
    const dir = await mkdtemp(path.join(tmpdir(), 'hilbench-probe-'));
    const elfPath = path.join(dir, `${image.sha256.slice(0, 16)}.elf`);
    try {
      await writeFile(elfPath, image.bytes);
      await this.tool('flash', flashArgs(this.options.probe, elfPath), this.options.attachment.timeouts.flashMs, signal);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** Flushes stale input, opens the gate, then starts the release command (not awaited). */
  private async releaseReset(signal: AbortSignal | undefined) {
    await this.options.link.flushInput().catch((error: unknown) => this.failWith(error));
    this.releaseMs = this.options.clock.nowMs();
    this.lastAtNanos = 0;
    this.runFromMs = undefined;
    this.state = 'running';
    const release = this.tool('release reset', releaseResetArgs(this.options.probe), this.options.attachment.timeouts.resetMs, signal);
    this.release = release.then(
      () => {
        this.release = undefined;
      },
      (error: unknown) => {
        this.release = undefined;
        // Unknown state: the next run tries the release again.
        this.state = 'held';
        throw error;
      },
    );
    // Failures surface through `waitFor`; this keeps an early one from being "unhandled".
    this.release.catch(() => this.wake());
  }

  /** Waits for the deadline, `until`, cancellation, a lost port or a failed release. */
  private waitFor(deadlineMs: number, options: RunOptions): Promise<'elapsed' | 'until'> {
    const { clock } = this.options;
    return new Promise((resolve, reject) => {
      let releaseError: unknown;
      this.release?.catch((error: unknown) => {
        releaseError = error;
      });
      const check = () => {
        if (this.closed) return finish(new BackendError('cancelled', `run on ${this.board.id} cancelled: device closed`));
        if (options.signal?.aborted) {
          return finish(new BackendError('cancelled', 'run cancelled', { cause: options.signal.reason }));
        }
        if (this.options.link.lost) return finish(this.options.link.lost);
        if (releaseError !== undefined) return finish(releaseError);
        if (options.until?.()) return finish(undefined, 'until');
        if (clock.nowMs() >= deadlineMs) return finish(undefined, 'elapsed');
      };
      const finish = (error: unknown, reason?: 'elapsed' | 'until') => {
        clock.clearTimeout(timer);
        this.wakers.delete(check);
        options.signal?.removeEventListener('abort', onAbort);
        if (error !== undefined || !reason) {
          // A cancelled run kills the release command too.
          for (const controller of this.tools) controller.abort(new Error('run stopped'));
          reject(error);
        } else resolve(reason);
      };
      const onAbort = () => check();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.wakers.add(check);
      this.release?.catch(() => check());
      const timer: TimerHandle = clock.setTimeout(check, Math.max(0, deadlineMs - clock.nowMs()));
      check();
    });
  }

  private receive(bytes: Uint8Array) {
    if (this.state !== 'running' || this.closed) {
      this.discardedBeforeResetBytes += bytes.length;
      return;
    }
    // Host clocks can step backwards; timestamps must not.
    const atNanos = Math.max(this.lastAtNanos, (this.options.clock.nowMs() - this.releaseMs) * NANOS_PER_MS);
    this.lastAtNanos = atNanos;
    const chunk = { atNanos, bytes: bytes.slice() };
    this.uart.emit(chunk);
    this.wake();
  }

  private wake() {
    for (const waker of [...this.wakers]) waker();
  }

  /** Runs one tool step; a failure becomes the step's `BackendError`, recorded for board health. */
  private async tool(step: ProbeStep, args: string[], timeoutMs: number, signal: AbortSignal | undefined): Promise<void> {
    throwIfCancelled(signal, step);
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    this.tools.add(controller);
    try {
      const result = await runTool(this.options.toolPath, args, {
        clock: this.options.clock,
        timeoutMs,
        killGraceMs: this.options.attachment.timeouts.killGraceMs,
        signal: controller.signal,
        env: this.options.toolEnv,
      });
      const failure = toolFailure(step, this.options.label ?? this.board.id, result, timeoutMs);
      if (failure) await this.failWith(stoppedByDeadline(failure, signal) ?? failure);
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.tools.delete(controller);
    }
  }

  private async failWith(error: unknown): Promise<never> {
    if (error instanceof BackendError && error.isInfrastructure) await this.options.hooks.failed(error);
    throw error;
  }

  private assertUsable() {
    if (this.closed) throw new BackendError('internal', `probe device for ${this.board.id} used after close`);
    if (this.options.link.lost) throw this.options.link.lost;
  }
}

/**
 * A tool stopped because the job's own signal was aborted with an infrastructure reason (the
 * dispatcher's deadline aborts with a `timeout` BackendError) is not a user's cancellation: it
 * becomes that reason's kind, says it was the deadline and keeps the tool's exit and output, so
 * it counts towards quarantine like the tool timing out by itself.
 */
function stoppedByDeadline(failure: BackendError, signal: AbortSignal | undefined): BackendError | undefined {
  const reason: unknown = signal?.reason;
  if (failure.kind !== 'cancelled' || !signal?.aborted || !(reason instanceof BackendError) || !reason.isInfrastructure) return undefined;
  return new BackendError(reason.kind, `${failure.message.replace(/ cancelled$/, '')} stopped by the job deadline: ${reason.message}`, {
    ...(failure.exitCode !== undefined ? { exitCode: failure.exitCode } : {}),
    ...(failure.outputTail !== undefined ? { outputTail: failure.outputTail } : {}),
    cause: reason,
  });
}
