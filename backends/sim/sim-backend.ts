import type { Board } from '../../boards/board-schema.js';
import { type Clock, systemClock } from '../../core/clock.js';
import { pinNamesOf } from '../../core/pins.js';
import { readRp2040Bootrom } from '../../sim/rp2040-bootrom.js';
import type { UnmodelledListener } from '../../sim/sim-engine.js';
import { SimError } from '../../sim/sim-error.js';
import { type Availability, type Backend, BackendError, type Device } from '../backend.js';
import { SimDevice } from './sim-device.js';
import { mcuPinsOf, simEngineFactory } from './sim-engines.js';
import { defaultSimThreadEntry, type SimThread } from './sim-thread-host.js';
import { acquireSimThread, releaseSimThread } from './sim-thread-pool.js';

export interface SimBackendOptions {
  /** The RP2040 B1 boot ROM (raw .bin or .elf), for Pico SDK images (bin/ fills it from --rp2040-bootrom or HILBENCH_RP2040_BOOTROM). */
  rp2040BootromPath?: string;
  /** Host clock for the `stats.hostMs` of devices (injected: the system clock in production). */
  clock: Clock;
  /** Simulated nanoseconds between two looks at the host (UART batch, abort, UART input) in the engine's thread; default 1 ms. */
  sliceNanos?: number;
  /**
   * Called for every access the simulator does not model (an unimplemented register), with the
   * running count per message: for each message once with count 1, then with the latest count
   * at most once per slice. Default: a `console.warn` the first time each message is seen.
   * Tests pass a function that throws (the run then fails) or collects.
   */
  onUnmodelled?: UnmodelledListener;
  /** Host ms a busy engine thread may show no sign of life (detected within twice this) before its job fails; default 30 000. */
  answerWithinMs?: number;
  /**
   * The clock of that watchdog; default the system clock. Separate from `clock` because it judges
   * a real thread: a test's fake clock that jumps a minute must not make a busy thread look hung.
   */
  watchdogClock?: Clock;
  /**
   * Linux: the nice value (1..19) of engine threads, below the main thread's 0, so that when every
   * core is busy with engines the process's event loop (the server's answers) wins the CPU; say
   * 10 on a host that runs a lab worker and little else. Default: engine threads keep the
   * process's priority (on a shared host a low priority would starve the simulators instead).
   */
  engineThreadNice?: number;
  /** The engine thread's entry module; default `backends/sim/sim-thread`. Tests pass one whose engines fail on purpose. */
  threadEntry?: URL;
}

const warnOnce: UnmodelledListener = (message, count) => {
  if (count === 1) console.warn(`hilbench sim: not modelled: ${message}`);
};

const DEFAULT_ANSWER_WITHIN_MS = 30_000;

/**
 * The `sim` backend: runs firmware on simulated chips in pure TypeScript: RP2040 boards on
 * rp2040js, ATmega328P boards on avr8js (`backends.sim.engine` in the board file). Each open
 * device's engine runs in a worker thread of its own, so devices run on as many cores as the
 * host has and the host's event loop stays free (decision 0520). Time is simulated. See
 * docs/backends/sim.md.
 */
export class SimBackend implements Backend {
  readonly name = 'sim' as const;
  private readonly bootromPath: string | undefined;
  private bootrom: Uint32Array | undefined;
  /** Set by `close`: threads of devices that close later are ended, not kept. */
  private closed = false;

  constructor(private readonly options: SimBackendOptions) {
    const nice = options.engineThreadNice;
    if (nice !== undefined && !(Number.isInteger(nice) && nice >= 1 && nice <= 19)) {
      throw new RangeError(`engineThreadNice must be a whole number from 1 to 19, not ${nice}`);
    }
    this.bootromPath = options.rp2040BootromPath;
  }

  async availability(board: Board): Promise<Availability> {
    try {
      this.checkRuns(board);
      return { available: true };
    } catch (err) {
      return { available: false, reason: (err as Error).message };
    }
  }

  async open(board: Board, options: { signal?: AbortSignal } = {}): Promise<Device> {
    if (options.signal?.aborted) throw new BackendError('cancelled', `opening ${board.id} cancelled`, { cause: options.signal.reason });
    let bootrom: Uint32Array | undefined;
    try {
      bootrom = this.checkRuns(board);
    } catch (err) {
      const kind = err instanceof SimError || err instanceof BackendError ? 'unavailable' : 'internal';
      throw new BackendError(kind, `board ${board.id} cannot run on the sim backend: ${(err as Error).message}`, { cause: err });
    }
    const thread = await acquireSimThread(
      this.options.threadEntry ?? defaultSimThreadEntry,
      { clock: this.options.watchdogClock ?? systemClock, answerWithinMs: this.answerWithinMs },
      { nice: this.options.engineThreadNice },
    );
    thread.label = `the simulator thread of ${board.id}`;
    const device = new SimDevice(board, {
      thread,
      mcuPins: mcuPinsOf(board) ?? [],
      clock: this.options.clock,
      sliceNanos: this.options.sliceNanos,
      onUnmodelled: this.options.onUnmodelled ?? warnOnce,
      release: (usable) => this.takeBack(usable),
    });
    const opened = await thread.request({ type: 'open', board, bootrom }).catch((err: unknown) => err);
    if (opened instanceof Error) {
      thread.terminate();
      releaseSimThread(thread, { end: true });
      throw opened instanceof BackendError ? opened : new BackendError('internal', `${thread.label} could not open ${board.id}: ${opened.message}`, { cause: opened });
    }
    return device;
  }

  /** Pins of every board this backend runs: the board file's names and the simulated MCU's. */
  pinNames(board: Board): readonly string[] | undefined {
    const mcuPins = mcuPinsOf(board);
    return mcuPins && pinNamesOf(mcuPins, board.pins);
  }

  /** Devices still open end their threads when they close (idle threads are shared: `sim-thread-pool.ts`). */
  close(): void {
    this.closed = true;
  }

  private get answerWithinMs(): number {
    return this.options.answerWithinMs ?? DEFAULT_ANSWER_WITHIN_MS;
  }

  /** Keeps a closed device's thread for the next device, or ends it. */
  private takeBack(thread: SimThread) {
    releaseSimThread(thread, { end: this.closed });
  }

  /** Throws when `board` cannot run here; returns the B1 ROM to load, if one is configured and the board needs it. */
  private checkRuns(board: Board): Uint32Array | undefined {
    const needsRom = board.backends.sim?.engine === 'rp2040js';
    const bootrom = needsRom ? this.loadBootrom() : undefined;
    // Builds nothing: throws for a board without a usable engine.
    simEngineFactory(board, { bootrom, onUnmodelled: () => undefined });
    return bootrom;
  }

  /** Reads the configured bootrom once; a configured but unusable file makes RP2040 boards unavailable. */
  private loadBootrom(): Uint32Array | undefined {
    if (!this.bootromPath) return undefined;
    this.bootrom ??= readRp2040Bootrom(this.bootromPath);
    return this.bootrom;
  }
}
