import type { Board } from '../../boards/board-schema.js';
import type { Clock } from '../../core/clock.js';
import { type EngineRunStop, runEngine } from '../../sim/run-engine.js';
import type { SimEngine, SimImage } from '../../sim/sim-engine.js';
import { SimError } from '../../sim/sim-error.js';
import { resolvePinName } from '../../core/pins.js';
import {
  BackendError,
  type Device,
  type DevicePins,
  type FirmwareImage,
  type RunOptions,
  type RunStop,
  throwIfCancelled,
  type UartChunk,
} from '../backend.js';
import { checkImageForBoard } from '../image-check.js';
import { UartFanout } from '../uart-fanout.js';
import { simDeviceDebug } from './sim-debug.js';

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

/** What the device needs from its backend: how to build a fresh chip for an image. */
export interface SimDeviceOptions {
  createEngine: (image: SimImage) => SimEngine;
  /** The simulated MCU's pin names (`GP25`, `PB5`); the board file adds its own. */
  mcuPins: readonly string[];
  /** Host clock for `stats.hostMs`. */
  clock: Clock;
  sliceNanos?: number;
  yieldToHost?: () => Promise<void>;
}

/**
 * A board on the pure-TypeScript simulator. `flash` builds a fresh chip with the image loaded
 * and held in reset; `run` releases it and runs in simulated time; `reset` builds a fresh chip
 * again from the same image.
 */
export class SimDevice implements Device {
  readonly timeBase = 'simulated' as const;
  private readonly uart = new UartFanout();
  private readonly closing = new AbortController();
  private image: FirmwareImage | undefined;
  private engine: SimEngine | undefined;
  private running = false;
  private debugging = false;
  private closed = false;
  /** Totals of the engines replaced by reset or flash. */
  private retired = { instructions: 0, simulatedNanos: 0, sleptNanos: 0, droppedRxBytes: 0 };
  private hostMs = 0;
  /** Levels driven from outside, by MCU pin name: applied to every chip built after (flash, reset). */
  private readonly driven = new Map<string, 0 | 1>();

  readonly pins: DevicePins = {
    read: async (name) => {
      const pin = this.mcuPin(name);
      if (!this.engine) throw new BackendError('bad-image', `reading pin ${name} before flash on ${this.board.id}: no firmware loaded`);
      return this.engine.pins.read(pin);
    },
    drive: async (name, level) => {
      const pin = this.mcuPin(name);
      this.driven.set(pin, level);
      this.engine?.pins.drive(pin, level);
    },
  };

  /** The debug capability: the engine's GDB stub on a fresh chip (backends/sim/sim-debug.ts). */
  readonly debug = simDeviceDebug({
    boardId: () => this.board.id,
    resetEngine: () => {
      this.assertUsable('attaching a debugger');
      if (!this.image) throw new BackendError('bad-image', `attaching a debugger to ${this.board.id} before flash: no firmware loaded`);
      const engine = this.build(this.image);
      this.retire();
      this.engine = engine;
      this.applyDriven();
      return engine;
    },
    emitUart: (chunk) => this.uart.emit(chunk),
    setDebugging: (debugging) => (this.debugging = debugging),
  });

  constructor(
    readonly board: Board,
    private readonly options: SimDeviceOptions,
  ) {}

  get droppedUartBytes(): number {
    return this.retired.droppedRxBytes + (this.engine?.droppedRxBytes ?? 0);
  }

  get stats(): SimStats {
    const e = this.engine;
    return {
      instructions: this.retired.instructions + (e?.instructions ?? 0),
      simulatedNanos: this.retired.simulatedNanos + (e?.nanos ?? 0),
      sleptNanos: this.retired.sleptNanos + (e?.sleptNanos ?? 0),
      hostMs: this.hostMs,
      coreClockHz: e?.clockHz,
    };
  }

  async flash(image: FirmwareImage, options: { signal?: AbortSignal } = {}): Promise<void> {
    this.assertUsable('flash');
    throwIfCancelled(options.signal, 'flash');
    checkImageForBoard(image, this.board);
    const engine = this.build(image);
    this.retire();
    this.image = image;
    this.engine = engine;
    this.applyDriven();
  }

  onUart(listener: (chunk: UartChunk) => void): () => void {
    return this.uart.subscribe(listener);
  }

  async run(durationNanos: number, options: RunOptions = {}): Promise<RunStop> {
    this.assertUsable('run');
    throwIfCancelled(options.signal, 'run');
    const engine = this.engine;
    if (!engine) throw new BackendError('bad-image', `run called before flash on ${this.board.id}: no firmware loaded`);
    if (!Number.isFinite(durationNanos) || durationNanos < 0) {
      throw new BackendError('internal', `run duration must be a finite, non-negative number of nanoseconds, not ${durationNanos}`);
    }
    const signal = options.signal ? AbortSignal.any([options.signal, this.closing.signal]) : this.closing.signal;
    this.running = true;
    const startedMs = this.options.clock.nowMs();
    let stop: EngineRunStop;
    try {
      stop = await runEngine(engine, {
        endNanos: durationNanos,
        sliceNanos: this.options.sliceNanos,
        yieldToHost: this.options.yieldToHost,
        signal,
        until: options.until,
        onUart: (chunk) => this.uart.emit(chunk),
      });
    } catch (err) {
      throw asBackendError(err, `simulating ${this.board.id}`);
    } finally {
      this.running = false;
      this.hostMs += this.options.clock.nowMs() - startedMs;
    }
    if (stop.reason === 'cancelled') {
      const why = this.closed ? 'the device was closed' : 'its abort signal fired';
      throw new BackendError('cancelled', `run on ${this.board.id} cancelled after ${stop.elapsedNanos} simulated ns: ${why}`, {
        cause: options.signal?.reason,
      });
    }
    return stop;
  }

  async writeUart(bytes: Uint8Array): Promise<void> {
    this.assertUsable('writeUart');
    if (!this.engine) throw new BackendError('bad-image', `writeUart called before flash on ${this.board.id}: no firmware to receive it`);
    this.engine.queueUartInput(bytes);
  }

  async reset(): Promise<void> {
    this.assertUsable('reset');
    if (!this.image) return;
    const engine = this.build(this.image);
    this.retire();
    this.engine = engine;
    this.applyDriven();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.closing.abort(new Error('device closed'));
    this.debug.detachAll();
    this.uart.clear();
    // Let the chip's memories (16 MiB of RP2040 flash) go; the totals stay readable in `stats`.
    this.retire();
  }

  /** The MCU pin `name` means on this board (its own name or the board file's). */
  private mcuPin(name: string): string {
    const pin = resolvePinName(name, this.options.mcuPins, this.board.pins);
    if (!pin) throw new BackendError('internal', `${this.board.id} has no pin ${JSON.stringify(name)}`);
    return pin;
  }

  private applyDriven() {
    for (const [pin, level] of this.driven) this.engine?.pins.drive(pin, level);
  }

  private build(image: FirmwareImage): SimEngine {
    try {
      return this.options.createEngine(image);
    } catch (err) {
      throw asBackendError(err, `loading the image into ${this.board.id}`);
    }
  }

  /** Folds the current engine's counters into the totals; bytes still on their way to it are lost. */
  private retire() {
    const e = this.engine;
    if (!e) return;
    this.retired.instructions += e.instructions;
    this.retired.simulatedNanos += e.nanos;
    this.retired.sleptNanos += e.sleptNanos;
    this.retired.droppedRxBytes += e.droppedRxBytes + e.pendingRxBytes;
    this.engine = undefined;
  }

  private assertUsable(what: string) {
    if (this.closed) throw new BackendError('internal', `${what} on the sim device for ${this.board.id} after close`);
    if (this.debugging && what !== 'writeUart') {
      throw new BackendError('internal', `${what} on the sim device for ${this.board.id} while a debugger is attached`);
    }
    if (this.running && what !== 'writeUart') {
      throw new BackendError('internal', `${what} on the sim device for ${this.board.id} while a run is in progress`);
    }
  }
}

function asBackendError(err: unknown, doing: string): BackendError {
  if (err instanceof BackendError) return err;
  if (err instanceof SimError) return new BackendError(err.kind, err.message, { cause: err });
  return new BackendError('internal', `the simulator failed unexpectedly while ${doing}: ${(err as Error).message}`, { cause: err });
}
