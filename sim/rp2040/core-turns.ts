import type { RP2040 } from 'rp2040js';
import { RP2040_BOOTROM_BYTES } from '../rp2040-bootrom.js';
import type { SimClock } from '../sim-clock.js';
import type { OwnRomCalls } from './own-rom-calls.js';
import type { SecondCore } from './second-core.js';

type Core = RP2040['core'];

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
}

/**
 * How the two cores of one RP2040 share the host (decisions 0526, 0570, 0635): who runs, for how
 * long, and how simulated time moves.
 *
 * While core 1 is parked (in the holding pen with an empty FIFO, or held off by the PSM) core 0
 * runs alone in a loop of its own, exactly as a single-core chip: core 1 costs nothing. Once core
 * 1 has work, the cores take turns: core 0 runs `CORE_QUANTUM_CYCLES`, ticking the chip's clock
 * (timers, UART, alarms), then core 1 runs until its own time reaches the clock. When both sleep,
 * time skips to the next clock event.
 *
 * The loops are the engine's per-instruction cost, so they do no more per instruction than raw
 * rp2040js's execute/tick loop plus one `waiting` check (decision 0635): the end of a turn is the
 * clock's stop mark (`SimClock.stopAt`, checked in the compare `tick` already makes), and the
 * counters and the cycle time live in locals for the length of a turn.
 */
export class CoreTurns {
  instructions = 0;
  /** Simulated time skipped while every core slept. */
  sleptNanos = 0;
  /** Set when the current turn must end: output ready, a halt, a change of clk_sys, or core 1 has work. */
  breakLoop = false;
  /** Set once the chip has halted (an exit or a crash): nothing runs after it. */
  private halted = false;
  private nanosPerCycle: number;
  /** The stop mark's callback, made once (`SimClock.stopAt`). */
  private readonly endTurn = () => {
    this.breakLoop = true;
  };

  constructor(
    private readonly chip: RP2040,
    private readonly clock: SimClock,
    private readonly core1: SecondCore,
    private readonly options: CoreTurnsOptions,
  ) {
    this.nanosPerCycle = 1e9 / chip.clkSys;
  }

  /** The chip halted: the turn in progress ends, and no core runs again. */
  halt(): void {
    this.halted = true;
    this.breakLoop = true;
  }

  /** clk_sys changed: a cycle takes `1e9 / clkSys` ns from the next instruction on. */
  clockChanged(clkSys: number): void {
    this.nanosPerCycle = 1e9 / clkSys;
    // The loops keep the cycle time in a local for a turn; ending the turn makes them read it again.
    this.breakLoop = true;
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
    if (clock.nanos >= untilNanos) return;
    const romCalls = this.options.romCalls;
    // Calls into the own ROM are trapped below this address (none without it); a local, so the loop compares with a register.
    const romEnd = romCalls ? RP2040_BOOTROM_BYTES : 0;
    const nanosPerCycle = this.nanosPerCycle;
    let instructions = 0;
    // The turn ends in `tick`'s own compare (or `advanceTo`'s) once time reaches `untilNanos`.
    clock.stopAt(untilNanos, this.endTurn);
    try {
      while (!this.breakLoop) {
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
        instructions++;
        if (core.PC < romEnd) clock.tick(romCalls!.call(core, 0) * nanosPerCycle);
        else clock.tick(core.executeInstruction() * nanosPerCycle);
      }
    } finally {
      this.instructions += instructions;
      clock.clearStop();
    }
  }

  /** Runs core 1 until its own time catches up with the clock (core 0's), or it sleeps. */
  private runCore1() {
    const second = this.core1;
    // Core 1's turn does not move the clock: its end is fixed when the turn starts.
    const endNanos = this.clock.nanos;
    const romCalls = this.options.romCalls;
    // What ended core 0's turn (its stop mark, say) is not core 1's business.
    this.breakLoop = false;
    while (second.nanos < endNanos && !this.halted) {
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
      second.nanos = this.runCore1Code(core, second.nanos, endNanos);
    }
    // Asleep or parked, core 1 idles along with the clock.
    if (second.nanos < endNanos) second.nanos = endNanos;
  }

  /**
   * Core 1's own instructions from `nanos` (its time) until that reaches `endNanos`, it sleeps,
   * reaches the boot ROM, leaves the running state (a reset by the PSM) or the turn is broken;
   * returns its time then.
   */
  private runCore1Code(core: Core, nanos: number, endNanos: number): number {
    const second = this.core1;
    const romEnd = this.options.romCalls ? RP2040_BOOTROM_BYTES : 0;
    const nanosPerCycle = this.nanosPerCycle;
    let instructions = 0;
    let at = nanos;
    try {
      do {
        at += core.executeInstruction() * nanosPerCycle;
        instructions++;
      } while (at < endNanos && !core.waiting && !this.breakLoop && core.PC >= romEnd && second.state === 'running');
    } finally {
      this.instructions += instructions;
    }
    // A clk_sys change (or anything else that breaks the turn) is taken up by the caller's loop.
    this.breakLoop = false;
    return at;
  }
}
