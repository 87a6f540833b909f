import type { RP2040 } from 'rp2040js';
import { RP2040_BOOTROM_BYTES } from '../rp2040-bootrom.js';
import type { SimClock } from '../sim-clock.js';
import type { OwnRomCalls } from './own-rom-calls.js';
import type { SecondCore } from './second-core.js';

/**
 * With both cores running, each runs at most this many of its cycles before the other catches
 * up: the bound on how far apart they are (decision 0526). Small enough that a core polling
 * the other sees it within a fraction of a microsecond at 125 MHz; large enough that switching
 * costs little beside the instructions run.
 */
export const CORE_QUANTUM_CYCLES = 64;

export interface CoreTurnsOptions {
  /** The own boot ROM's calls, when it is mapped (no B1 ROM file). */
  romCalls: OwnRomCalls | undefined;
  /** SEV from core 1: the holding pen signals each echo with it, as the SDK's FIFO functions do. */
  sendEventFromCore1(): void;
  /** True once the chip has halted (an exit or a crash): nothing runs after it. */
  halted(): boolean;
}

/**
 * How the two cores of one RP2040 share the host (decision 0526, 0570): who runs, for how long,
 * and how simulated time moves.
 *
 * While core 1 is parked (in the holding pen with an empty FIFO, or held off by the PSM) core 0
 * runs alone in a loop of its own, exactly as a single-core chip: core 1 costs nothing. Once core
 * 1 has work, the cores take turns: core 0 runs `CORE_QUANTUM_CYCLES`, ticking the chip's clock
 * (timers, UART, alarms), then core 1 runs until its own time reaches the clock. When both sleep,
 * time skips to the next clock event.
 */
export class CoreTurns {
  instructions = 0;
  /** Simulated time skipped while every core slept. */
  sleptNanos = 0;
  /** Set when the loop must stop: output ready, a halt, or core 1 has work. */
  breakLoop = false;
  nanosPerCycle: number;

  constructor(
    private readonly chip: RP2040,
    private readonly clock: SimClock,
    private readonly core1: SecondCore,
    private readonly options: CoreTurnsOptions,
  ) {
    this.nanosPerCycle = 1e9 / chip.clkSys;
  }

  /** Runs both cores until the clock reaches `targetNanos` or `stop()` says so. */
  run(targetNanos: number, stop: () => boolean): void {
    const clock = this.clock;
    while (clock.nanos < targetNanos && !stop()) {
      this.breakLoop = false;
      if (this.core1.parked) {
        this.runCore0(targetNanos, targetNanos);
        continue;
      }
      // One round: core 0 runs a quantum (its clock drives the timers), then core 1 catches up.
      this.runCore0(Math.min(targetNanos, clock.nanos + CORE_QUANTUM_CYCLES * this.nanosPerCycle), targetNanos);
      this.runCore1();
    }
  }

  /**
   * Runs core 0 until the clock reaches `untilNanos` or `breakLoop` is set. Asleep, it skips to
   * the next clock event; when core 1 is asleep too (or parked), as far as `targetNanos`.
   */
  private runCore0(untilNanos: number, targetNanos: number) {
    const core = this.chip.core;
    const clock = this.clock;
    const romCalls = this.options.romCalls;
    while (clock.nanos < untilNanos && !this.breakLoop) {
      if (core.waiting) {
        // WFI/WFE: nothing runs until an interrupt; jump to the next scheduled event.
        const bothAsleep = !this.core1.runnable;
        const limit = bothAsleep ? targetNanos : untilNanos;
        const next = clock.nextAlarmNanos;
        const to = next === undefined || next > limit ? limit : next;
        if (bothAsleep) this.sleptNanos += to - clock.nanos;
        clock.advanceTo(to);
        continue;
      }
      if (core.PC < RP2040_BOOTROM_BYTES && romCalls) {
        this.instructions++;
        clock.tick(romCalls.call(core, 0) * this.nanosPerCycle);
        continue;
      }
      const cycles = core.executeInstruction();
      this.instructions++;
      clock.tick(cycles * this.nanosPerCycle);
    }
  }

  /** Runs core 1 until its own time catches up with the clock (core 0's), or it sleeps. */
  private runCore1() {
    const second = this.core1;
    const clock = this.clock;
    const romCalls = this.options.romCalls;
    while (second.nanos < clock.nanos && !this.options.halted()) {
      if (second.state !== 'running') {
        if (!second.runnable) break;
        second.nanos += second.penStep() * this.nanosPerCycle;
        this.options.sendEventFromCore1();
        continue;
      }
      const core = second.core;
      if (core.waiting) break;
      if (core.PC < RP2040_BOOTROM_BYTES && romCalls) {
        this.instructions++;
        second.nanos += romCalls.call(core, 1) * this.nanosPerCycle;
        continue;
      }
      const cycles = core.executeInstruction();
      this.instructions++;
      second.nanos += cycles * this.nanosPerCycle;
    }
    // Asleep or parked, core 1 idles along with the clock.
    if (second.nanos < clock.nanos) second.nanos = clock.nanos;
  }
}
