import type { Board } from '../../boards/board-schema.js';
import type { Clock } from '../../core/clock.js';
import { resolvePinName } from '../../core/pins.js';
import type { UnmodelledListener } from '../../sim/sim-engine.js';
import {
  BackendError,
  type Device,
  type DevicePins,
  type FirmwareImage,
  type RunOptions,
  type RunStop,
  throwIfCancelled,
} from '../backend.js';
import { checkImageForBoard } from '../image-check.js';
import { UartFanout } from '../uart-fanout.js';
import type { SimCounters } from './sim-chip.js';
import { simDeviceDebug } from './sim-debug.js';
import type { HostRequest, SimThread } from './sim-thread-host.js';
import { STOP, type ThreadAnswer, type ThreadBatch } from './sim-thread-protocol.js';

/** Throughput of a simulated device since it was opened: what `npm run bench` reports. */
export interface SimStats {
  /** Instructions executed, over all runs and resets. */
  instructions: number;
  /** Simulated nanoseconds run, over all runs and resets. */
  simulatedNanos: number;
  /** Part of `simulatedNanos` skipped while the core slept (no instructions executed). */
  sleptNanos: number;
  /** Host milliseconds spent inside `run`, on the injected clock. */
  hostMs: number;
  /** The core clock of the current chip, in hertz, as the firmware has set it (undefined before flash). */
  coreClockHz: number | undefined;
}

/** What the device needs from its backend. */
export interface SimDeviceOptions {
  /** The engine thread this device has to itself until it closes. */
  thread: SimThread;
  /** The simulated MCU's pin names (`GP25`, `PB5`); the board file adds its own. */
  mcuPins: readonly string[];
  /** Host clock for `stats.hostMs`. */
  clock: Clock;
  sliceNanos?: number;
  onUnmodelled: UnmodelledListener;
  /** Called once when the device closes, with its thread (ended or kept for the next device). */
  release: (thread: SimThread) => void;
}

const noCounters: SimCounters = { instructions: 0, simulatedNanos: 0, sleptNanos: 0, coreClockHz: undefined, droppedRxBytes: 0 };

/**
 * A board on the pure-TypeScript simulator, whose chip runs in an engine thread of its own
 * (`SimThread`, docs/backends/sim.md): `flash` builds a fresh chip there with the image loaded
 * and held in reset; `run` releases it and runs in simulated time; `reset` builds a fresh chip
 * again from the same image. UART output arrives in batches and is handed to `onUart` listeners
 * here, on the host; `until` is judged here too, on every chunk.
 */
export class SimDevice implements Device {
  readonly timeBase = 'simulated' as const;
  private readonly uart = new UartFanout();
  private readonly closing = new AbortController();
  private readonly thread: SimThread;
  private flashed = false;
  private running: Promise<unknown> | undefined;
  private debugging = false;
  private closed = false;
  /** The totals the thread reported last. */
  private counters = noCounters;
  private hostMs = 0;

  readonly pins: DevicePins = {
    read: async (name) => {
      const pin = this.mcuPin(name);
      if (!this.flashed) throw new BackendError('bad-image', `reading pin ${name} before flash on ${this.board.id}: no firmware loaded`);
      const answer = await this.request({ type: 'read', pin }, `reading pin ${name} of ${this.board.id}`);
      if (!answer.reading) throw new BackendError('internal', `${this.thread.label} answered a pin read without a reading`);
      return answer.reading;
    },
    drive: async (name, level) => {
      const pin = this.mcuPin(name);
      this.assertUsable('pins.drive');
      this.thread.notify({ type: 'drive', pin, level });
    },
  };

  /** The debug capability: the engine's GDB stub on a fresh chip, in the engine's thread (backends/sim/sim-debug.ts). */
  readonly debug: ReturnType<typeof simDeviceDebug>;

  constructor(
    readonly board: Board,
    private readonly options: SimDeviceOptions,
  ) {
    this.thread = options.thread;
    this.debug = simDeviceDebug({
      boardId: () => this.board.id,
      thread: this.thread,
      checkAttachable: () => {
        this.assertUsable('attaching a debugger');
        if (!this.flashed) throw new BackendError('bad-image', `attaching a debugger to ${this.board.id} before flash: no firmware loaded`);
      },
      attachOnThread: async (port) => {
        await this.request({ type: 'debug-attach', port }, `attaching a debugger to ${this.board.id}`, undefined, [port]);
      },
      serveOnThread: async (port, { tcpPort, host, maxPacketBytes, relay }) => {
        const answer = await this.request({ type: 'debug-serve', port, tcpPort, host, maxPacketBytes, ...(relay ? { relay } : {}) }, `serving GDB for ${this.board.id}`, undefined, [port]);
        if (answer.listening === undefined) throw new BackendError('internal', `${this.thread.label} answered a debug-serve without its port`);
        return answer.listening;
      },
      takeCounters: (output) => {
        this.counters = output.counters;
        this.reportUnmodelled(output.unmodelled);
      },
      emitUart: (chunk) => this.uart.emit(chunk),
      setDebugging: (debugging) => (this.debugging = debugging),
    });
  }

  get droppedUartBytes(): number {
    return this.counters.droppedRxBytes;
  }

  get stats(): SimStats {
    const { instructions, simulatedNanos, sleptNanos, coreClockHz } = this.counters;
    return { instructions, simulatedNanos, sleptNanos, hostMs: this.hostMs, coreClockHz };
  }

  async flash(image: FirmwareImage, options: { signal?: AbortSignal } = {}): Promise<void> {
    this.assertUsable('flash');
    throwIfCancelled(options.signal, 'flash');
    checkImageForBoard(image, this.board);
    await this.request({ type: 'flash', bytes: image.bytes }, `loading the image into ${this.board.id}`);
    this.flashed = true;
  }

  onUart(listener: (chunk: { atNanos: number; bytes: Uint8Array }) => void): () => void {
    return this.uart.subscribe(listener);
  }

  async run(durationNanos: number, options: RunOptions = {}): Promise<RunStop> {
    this.assertUsable('run');
    throwIfCancelled(options.signal, 'run');
    if (!this.flashed) throw new BackendError('bad-image', `run called before flash on ${this.board.id}: no firmware loaded`);
    if (!Number.isFinite(durationNanos) || durationNanos < 0) {
      throw new BackendError('internal', `run duration must be a finite, non-negative number of nanoseconds, not ${durationNanos}`);
    }
    const run = this.runOnThread(durationNanos, options);
    this.running = run.catch(() => undefined);
    try {
      return await run;
    } finally {
      this.running = undefined;
    }
  }

  async writeUart(bytes: Uint8Array): Promise<void> {
    this.assertUsable('writeUart');
    if (!this.flashed) throw new BackendError('bad-image', `writeUart called before flash on ${this.board.id}: no firmware to receive it`);
    this.thread.notify({ type: 'write', bytes: Uint8Array.from(bytes) });
  }

  async reset(): Promise<void> {
    this.assertUsable('reset');
    if (!this.flashed) return;
    await this.request({ type: 'reset' }, `loading the image into ${this.board.id}`);
  }

  /** Stops a run in progress (it rejects as cancelled), lets the chip go in its thread, and hands the thread back. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.closing.abort(new Error('device closed'));
    this.debug.detachAll();
    this.uart.clear();
    await this.running;
    if (this.thread.unusable === undefined) {
      // The chip's memories (16 MiB of RP2040 flash) go; the totals stay readable in `stats`.
      await this.request({ type: 'close' }, `closing ${this.board.id}`).catch(() => undefined);
    }
    this.options.release(this.thread);
  }

  private async runOnThread(durationNanos: number, options: RunOptions): Promise<RunStop> {
    const thread = this.thread;
    // Both signals are listened to, not `AbortSignal.any` of them: that costs about 60 µs of CPU a run (decision 0730).
    const signals = options.signal ? [options.signal, this.closing.signal] : [this.closing.signal];
    /** The first exception of a listener, `until` or `onUnmodelled`: it fails the run, as it did in process. */
    let failure: unknown;
    const fail = (err: unknown) => {
      failure ??= err;
      thread.setStop(STOP.abort);
    };
    const onAbort = () => thread.setStop(STOP.abort);
    thread.setStop(STOP.go);
    for (const signal of signals) signal.addEventListener('abort', onAbort, { once: true });
    thread.onBatch = (batch: ThreadBatch) => {
      this.counters = batch.counters;
      try {
        this.reportUnmodelled(batch.unmodelled);
        for (const chunk of batch.chunks) this.uart.emit(chunk);
        if (batch.ask && failure === undefined && options.until?.()) thread.setStop(STOP.until);
      } catch (err) {
        fail(err);
      }
      if (batch.ask) thread.giveVerdict();
    };
    const startedMs = this.options.clock.nowMs();
    let answer: ThreadAnswer;
    try {
      const request: HostRequest = { type: 'run', endNanos: durationNanos, sliceNanos: this.options.sliceNanos, asks: options.until !== undefined };
      answer = await this.request(request, `simulating ${this.board.id}`, fail);
      // The run's last output comes with its answer (after every batch, as the port keeps order).
      try {
        for (const chunk of answer.chunks ?? []) this.uart.emit(chunk);
      } catch (err) {
        fail(err);
      }
    } finally {
      thread.onBatch = undefined;
      for (const signal of signals) signal.removeEventListener('abort', onAbort);
      this.hostMs += this.options.clock.nowMs() - startedMs;
    }
    if (failure !== undefined) throw asBackendError(failure, `simulating ${this.board.id}`);
    const stop = answer.stop;
    if (!stop) throw new BackendError('internal', `${thread.label} answered a run without saying how it stopped`);
    if (stop.reason === 'cancelled') {
      const why = this.closed ? 'the device was closed' : 'its abort signal fired';
      throw new BackendError('cancelled', `run on ${this.board.id} cancelled after ${stop.elapsedNanos} simulated ns: ${why}`, {
        cause: options.signal?.reason,
      });
    }
    return stop;
  }

  /**
   * One request to the thread: its counters and unmodelled reports are taken in, its error thrown
   * as the `BackendError` it names. `onListenerError` takes an exception of `onUnmodelled`
   * (default: thrown as an internal failure of `doing`).
   */
  private async request(message: HostRequest, doing: string, onListenerError?: (err: unknown) => void, transfer?: Parameters<SimThread['request']>[1]): Promise<ThreadAnswer> {
    const answer = await this.thread.request(message, transfer);
    if (answer.counters) this.counters = answer.counters;
    try {
      this.reportUnmodelled(answer.unmodelled);
    } catch (err) {
      if (onListenerError) onListenerError(err);
      else throw asBackendError(err, doing);
    }
    if (answer.error) throw new BackendError(answer.error.kind, answer.error.message);
    return answer;
  }

  private reportUnmodelled(reports: ReadonlyArray<{ message: string; count: number }>) {
    for (const { message, count } of reports) this.options.onUnmodelled(message, count);
  }

  /** The MCU pin `name` means on this board (its own name or the board file's). */
  private mcuPin(name: string): string {
    const pin = resolvePinName(name, this.options.mcuPins, this.board.pins);
    if (!pin) throw new BackendError('internal', `${this.board.id} has no pin ${JSON.stringify(name)}`);
    return pin;
  }

  private assertUsable(what: string) {
    if (this.closed) throw new BackendError('internal', `${what} on the sim device for ${this.board.id} after close`);
    // UART input and driven pins reach the chip between slices, as they do during a run.
    const meanwhile = what === 'writeUart' || what === 'pins.drive';
    if (this.debugging && !meanwhile) {
      throw new BackendError('internal', `${what} on the sim device for ${this.board.id} while a debugger is attached`);
    }
    if (this.running && !meanwhile) {
      throw new BackendError('internal', `${what} on the sim device for ${this.board.id} while a run is in progress`);
    }
  }
}

function asBackendError(err: unknown, doing: string): BackendError {
  if (err instanceof BackendError) return err;
  return new BackendError('internal', `the simulator failed unexpectedly while ${doing}: ${(err as Error).message}`, { cause: err });
}
