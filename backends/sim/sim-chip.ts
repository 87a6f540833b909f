import type { PinReading } from '../../core/pins.js';
import { type EngineRunStop, type RunEngineOptions, runEngine } from '../../sim/run-engine.js';
import type { SimEngine, SimImage } from '../../sim/sim-engine.js';
import { SimError } from '../../sim/sim-error.js';
import type { SimGdbIo, SimGdbTarget } from '../../sim/sim-gdb-target.js';

/** Totals of one device's chips since it was opened, over all runs, resets and re-flashes. */
export interface SimCounters {
  instructions: number;
  simulatedNanos: number;
  sleptNanos: number;
  /** The core clock of the current chip, in hertz (undefined before flash). */
  coreClockHz?: number | undefined;
  /** Received bytes the firmware lost, plus bytes still queued when a chip was replaced. */
  droppedRxBytes: number;
}

/**
 * One device's simulated chip over its life, where its engine runs (the engine's thread):
 * `flash` gives a fresh chip with the image loaded and held in reset, `reset` returns it to that
 * state (both in place when the engine can, reusing the chip's memories: decisions 0655, 0821;
 * otherwise by building it again), and externally driven pin levels are applied again after each.
 */
export class SimChip {
  private image: SimImage | undefined;
  private engine: SimEngine | undefined;
  /** Totals of the engines replaced by reset or flash. */
  private retired: RetiredCounters = { instructions: 0, simulatedNanos: 0, sleptNanos: 0, droppedRxBytes: 0 };
  /** Levels driven from outside, by MCU pin name. */
  private readonly driven = new Map<string, 0 | 1>();

  constructor(private readonly createEngine: (image: SimImage) => SimEngine) {}

  get flashed(): boolean {
    return this.engine !== undefined;
  }

  get counters(): SimCounters {
    const e = this.engine;
    return {
      instructions: this.retired.instructions + (e?.instructions ?? 0),
      simulatedNanos: this.retired.simulatedNanos + (e?.nanos ?? 0),
      sleptNanos: this.retired.sleptNanos + (e?.sleptNanos ?? 0),
      coreClockHz: e?.clockHz,
      droppedRxBytes: this.retired.droppedRxBytes + (e?.droppedRxBytes ?? 0),
    };
  }

  /**
   * A fresh chip with `image`: the current one put back as built with the image loaded when the
   * engine can (decision 0821), otherwise a new one. A refused image changes nothing: the old
   * chip, its state and its counters stay.
   */
  flash(image: SimImage): void {
    const current = this.engine;
    if (current?.reflash) {
      // Read first: a reflash starts the engine's counters again from 0, and a refused one leaves them.
      const spent = countersOf(current);
      current.reflash(image);
      this.add(spent);
      this.image = image;
      this.applyDriven();
      return;
    }
    const engine = this.createEngine(image);
    this.retire();
    this.image = image;
    this.engine = engine;
    this.applyDriven();
  }

  reset(): void {
    if (!this.image) return;
    const current = this.engine;
    if (current?.reset) {
      this.add(countersOf(current));
      current.reset();
      this.applyDriven();
      return;
    }
    const engine = this.createEngine(this.image);
    this.retire();
    this.engine = engine;
    this.applyDriven();
  }

  /** Runs the current chip (see `runEngine`); throws when nothing is flashed. */
  run(options: RunEngineOptions): Promise<EngineRunStop> {
    return runEngine(this.requireEngine(), options);
  }

  /**
   * Resets the chip (held at reset release with the image loaded) and opens its engine's GDB stub on
   * it; the chip stays the current one after the debugger, so `run` carries on from its state.
   */
  openGdb(io: SimGdbIo, boardId: string): SimGdbTarget {
    if (!this.image) throw new SimError('bad-image', `attaching a debugger to ${boardId} before flash: no firmware loaded`);
    this.reset();
    const engine = this.requireEngine();
    if (!engine.openGdb) throw new SimError('unavailable', `the simulator of ${boardId} has no GDB stub`);
    return engine.openGdb(io);
  }

  queueUartInput(bytes: Uint8Array): void {
    this.requireEngine().queueUartInput(bytes);
  }

  readPin(pin: string): PinReading {
    return this.requireEngine().pins.read(pin);
  }

  drivePin(pin: string, level: 0 | 1): void {
    this.driven.set(pin, level);
    this.engine?.pins.drive(pin, level);
  }

  /** Lets the chip's memories go (16 MiB of RP2040 flash); the totals stay in `counters`. */
  release(): void {
    this.retire();
    this.image = undefined;
  }

  private requireEngine(): SimEngine {
    // The host checks this first and says what was called; this guards the thread on its own.
    if (!this.engine) throw new Error('no firmware is loaded');
    return this.engine;
  }

  private applyDriven() {
    for (const [pin, level] of this.driven) this.engine?.pins.drive(pin, level);
  }

  /** Folds the current engine's counters into the totals and lets it go. */
  private retire() {
    if (!this.engine) return;
    this.add(countersOf(this.engine));
    this.engine = undefined;
  }

  /** Adds an engine's counters to the totals before it starts again from 0. */
  private add(spent: RetiredCounters) {
    this.retired.instructions += spent.instructions;
    this.retired.simulatedNanos += spent.simulatedNanos;
    this.retired.sleptNanos += spent.sleptNanos;
    this.retired.droppedRxBytes += spent.droppedRxBytes;
  }
}

type RetiredCounters = Omit<SimCounters, 'coreClockHz'>;

/** What `e` has counted since it started; bytes still on their way to it count as dropped, as a reset or flash loses them. */
function countersOf(e: SimEngine): RetiredCounters {
  return { instructions: e.instructions, simulatedNanos: e.nanos, sleptNanos: e.sleptNanos, droppedRxBytes: e.droppedRxBytes + e.pendingRxBytes };
}
