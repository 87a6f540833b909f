import { type Logger, RP2040 } from 'rp2040js';
import type { Board } from '../boards/board-schema.js';
import type { PlacedSegment } from './load-segments.js';
import { HardFault, breakHalt, libraryMessage } from './rp2040/core-faults.js';
import { CoreTurns } from './rp2040/core-turns.js';
import { type CoreIndex, InterCoreFifo, SIO_FIFO_RD, SIO_FIFO_ST, SIO_FIFO_WR } from './rp2040/inter-core-fifo.js';
import { applyStart, planStart, type Rp2040Start } from './rp2040/load-and-start.js';
import { OwnBootrom } from './rp2040/own-bootrom.js';
import { OwnRomCalls } from './rp2040/own-rom-calls.js';
import { Rp2040GdbTarget } from './rp2040/rp2040-gdb-target.js';
import { Rp2040Pins } from './rp2040/rp2040-pins.js';
import { SecondCore } from './rp2040/second-core.js';
import { refuseUsbController } from './rp2040/usb-refusal.js';
import { SimClock } from './sim-clock.js';
import type { EngineHalt, EngineUartChunk, SimEngine, SimImage, UnmodelledListener } from './sim-engine.js';
import type { SimGdbIo, SimGdbTarget } from './sim-gdb-target.js';
import { SimError } from './sim-error.js';
import { StateSnapshot } from './state-snapshot.js';
import { UartOutputBuffer } from './uart-output-buffer.js';

const UARTFR = 0x18;
const UARTFR_RXFF = 1 << 6;
/** 115200 8N1 until the firmware programs the divider: ten bit times per character. */
const DEFAULT_BAUD = 115_200;
const BITS_PER_CHAR = 10;
/** SIO_IRQ_PROC0 and SIO_IRQ_PROC1 (datasheet §2.3.2): each wired to its own core only. */
const SIO_IRQ_PROC = [15, 16] as const;
/** PSM FRCE_OFF (datasheet §2.13): bit 16 holds core 1 in reset. */
const PSM_BASE = 0x40010000;
const PSM_FRCE_OFF = 0x04;
const PSM_PROC1 = 1 << 16;
/** The Thumb WFE instruction: SEV wakes a core sleeping in it, not one in WFI. */
const WFE_OPCODE = 0xbf20;
const CORE1 = ' on core 1';
/** Built once: the image is the same for every engine, and its entries hold no state. */
let ownBootrom: OwnBootrom | undefined;

export interface Rp2040EngineOptions {
  /** The B1 boot ROM as 32-bit words, when the bench has one; without it the project's own ROM is used. */
  bootrom?: Uint32Array;
  /** Called for accesses rp2040js does not model (unimplemented registers). */
  onUnmodelled: UnmodelledListener;
}

/**
 * One RP2040 on rp2040js with an image loaded, held at reset release.
 *
 * Boot (sim/rp2040/load-and-start.ts): bare-metal images start from their vector table at
 * 0x10000000, boot2 images as boot2 leaves the core. Without a configured B1 ROM, the project's
 * own ROM (decision 0251) is mapped; calls into it are trapped before they execute and run in
 * TypeScript (sim/rp2040/). Faults and exits (sim/rp2040/core-faults.ts): where the real core
 * would take a HardFault, the engine halts with `crashed`; semihosting exits as under QEMU.
 *
 * Core 1 (sim/rp2040/second-core.ts) waits in the boot ROM's holding pen and costs nothing
 * there. Who runs when is `CoreTurns` (sim/rp2040/core-turns.ts): core 0 alone until core 0
 * writes to the inter-core FIFO, then turns of `CORE_QUANTUM_CYCLES`. This class builds the chip
 * and wires core 1 into it (SIO, interrupts, SEV, PSM), and owns the UART and the halt.
 */
export class Rp2040Engine implements SimEngine {
  readonly clock = new SimClock();
  readonly rp2040: RP2040;
  readonly pins: Rp2040Pins;
  /** Where the image went; loaded again by each `reset`. */
  private placedSegments: PlacedSegment[] = [];
  droppedRxBytes = 0;
  /** The project's own boot ROM, mapped when no B1 ROM file is configured. */
  private readonly ownRom: OwnBootrom | undefined;
  readonly fifo: InterCoreFifo;
  readonly core1: SecondCore;
  /** Who runs when (sim/rp2040/core-turns.ts). */
  private readonly turns: CoreTurns;
  private readonly uartIndex: number;
  private readonly tx = new UartOutputBuffer();
  private readonly rxQueue: number[] = [];
  private readonly rxAlarm;
  private halt: EngineHalt | undefined;
  private outputReady = false;
  private readonly unmodelled = new Map<string, number>();
  /** The chip and engine as built, before the image: what `reset` puts back in place. */
  private readonly asBuilt = new StateSnapshot();
  /** What a `bkpt` on core 1 does: ends the run (a debugger's stub replaces it while attached, as it does the chip's `onBreak`). */
  core1Break: (code: number) => void = (code) => this.halted(breakHalt(this.rp2040, this.core1.core, code, CORE1, (m) => this.noteUnmodelled(m)));

  constructor(
    private readonly board: Board,
    private image: SimImage,
    private readonly options: Rp2040EngineOptions,
  ) {
    const uartName = board.backends.sim?.uart ?? 'uart0';
    this.uartIndex = board.mcu.uarts.findIndex((u) => u.name === uartName);
    if (this.uartIndex < 0 || this.uartIndex > 1) {
      throw new SimError('unavailable', `board ${board.id}: sim.uart "${uartName}" is not one of the RP2040's UARTs (uart0, uart1)`);
    }
    this.rp2040 = new RP2040(this.clock);
    this.pins = new Rp2040Pins(this.rp2040);
    this.rp2040.logger = this.coreLogger(0);
    // rp2040js `loadBootrom` resets the chip and erases flash to 0xff; the image is loaded after it.
    if (options.bootrom) {
      this.rp2040.loadBootrom(options.bootrom);
    } else {
      ownBootrom ??= new OwnBootrom();
      this.ownRom = ownBootrom;
      this.rp2040.loadBootrom(ownBootrom.words);
    }
    const core = this.rp2040.core;

    // Capture is attached before the first instruction runs.
    this.rp2040.uart[this.uartIndex]!.onByte = (value) => {
      if (this.tx.push(value, this.clock.nanos)) this.outputReady = this.turns.breakLoop = true;
    };
    this.rp2040.onBreak = (code) => this.halted(breakHalt(this.rp2040, core, code, '', (m) => this.noteUnmodelled(m)));
    this.rxAlarm = this.clock.createAlarm(() => this.deliverRxByte());

    this.fifo = new InterCoreFifo((side) => this.fifoChanged(side));
    const waitForVector = this.ownRom?.layout.functions.get('WV');
    this.core1 = new SecondCore(this.rp2040, {
      fifo: this.fifo,
      logger: this.coreLogger(1),
      onBreak: (code) => this.core1Break(code),
      // Without the own ROM there is no trapped entry to return to: an entry that returns runs whatever the B1 ROM has at 0.
      returnAddress: waitForVector === undefined ? 0 : waitForVector | 1,
      onLaunchFault: (message) => this.halted({ reason: 'crashed', message }),
    });
    const romCalls = this.ownRom
      ? new OwnRomCalls(this.ownRom, this.rp2040, { onHalt: (message) => this.halted({ reason: 'crashed', message }), enterPen: () => this.core1.enterPen() })
      : undefined;
    this.turns = new CoreTurns(this.rp2040, this.clock, this.core1, {
      romCalls,
      // The ROM signals its echo with SEV, as the SDK's FIFO functions do.
      sendEventFromCore1: () => this.sendEvent(1),
    });
    this.attachCore1();
    this.rp2040.addClockListener((clkSys) => {
      this.turns.clockChanged(clkSys);
      this.core1.clockChanged(clkSys);
    });
    // Taken before the image is loaded, so that a reset loads it again exactly as here. The board, the image, the ROM and the options are inputs, not state.
    this.asBuilt.take(this, {
      shared: new Set<object>([board, image, options, ...(this.ownRom ? [this.ownRom] : [])]),
      ownerRestored: new Set([this.rp2040.flash.buffer]),
    });
    this.loadImage(this.start(image));
  }

  get placed(): readonly PlacedSegment[] {
    return this.placedSegments;
  }

  /**
   * Back to the chip as `new Rp2040Engine` leaves it (both cores, peripherals, SRAM, clock and
   * counters as built, core 1 waiting in the ROM, the image loaded again), on the same chip and
   * memories: a new chip per reset left 16 MiB of flash for the collector to free in the next
   * run (decision 0655).
   */
  reset(): void {
    this.backToAsBuilt();
    this.loadImage(this.start(this.image));
  }

  /**
   * Another image on this chip: checked first (a refused image throws `SimError('bad-image')` with
   * the chip and its image as they were, mid-run or not), then the chip as built with the new
   * image loaded, as `new Rp2040Engine` would leave it, on the same memories (decisions 0655, 0821).
   */
  reflash(image: SimImage): void {
    const start = this.start(image);
    this.backToAsBuilt();
    this.image = image;
    this.loadImage(start);
  }

  /** The image checked against this chip: where it goes and where core 0 starts, nothing written yet. */
  private start(image: SimImage): Rp2040Start {
    return planStart(this.rp2040, this.board, image, { realBootrom: this.options.bootrom !== undefined });
  }

  /** The chip and engine as built, keeping the image: an input the snapshot records as a field but does not own. */
  private backToAsBuilt() {
    const { image } = this;
    // rp2040js runs an enabled PIO block on a host timer of its own; the snapshot puts the timer's
    // field back but cannot cancel a pending one, which would run beside the next job's PIO.
    for (const pio of this.rp2040.pio) pio.stop();
    this.asBuilt.restore();
    this.image = image;
  }

  /** Erased flash (what rp2040js's chip reset leaves), then the image, and core 0 where the image starts. */
  private loadImage(start: Rp2040Start) {
    this.rp2040.flash.fill(0xff);
    this.placedSegments = applyStart(this.rp2040, start);
  }

  /**
   * Wires core 1 into the chip: core 0's SIO sees its side of the FIFOs, shared peripherals
   * interrupt both cores, SEV reaches the other core, and PSM FRCE_OFF.proc1 resets core 1.
   * The USB controller is refused.
   */
  private attachCore1() {
    const chip = this.rp2040;
    const sio = chip.sio;
    const sioRead = sio.readUint32.bind(sio);
    const sioWrite = sio.writeUint32.bind(sio);
    sio.readUint32 = (offset: number) =>
      offset === SIO_FIFO_ST ? this.fifo.status(0) : offset === SIO_FIFO_RD ? this.fifo.read(0) : sioRead(offset);
    sio.writeUint32 = (offset: number, value: number) => {
      if (offset === SIO_FIFO_WR) this.fifo.write(0, value);
      else if (offset === SIO_FIFO_ST) this.fifo.clearSticky(0, value);
      else sioWrite(offset, value);
    };
    // Every interrupt line of the shared peripherals goes to both NVICs (datasheet §2.3.2); each core enables its own.
    chip.setInterrupt = (irq: number, value: boolean) => {
      chip.core.setInterrupt(irq, value);
      this.core1.core.setInterrupt(irq, value);
    };
    refuseUsbController(chip);
    const psm = chip.findPeripheral(PSM_BASE);
    const psmWrite = psm.writeUint32.bind(psm);
    psm.writeUint32 = (offset: number, value: number) => {
      psmWrite(offset, value);
      if (offset !== PSM_FRCE_OFF) return;
      if (value & PSM_PROC1) this.core1.powerOff();
      else this.core1.powerOn();
    };
  }

  /** rp2040js's logger for one core: SEV, faults and unmodelled accesses, with the core they came from. */
  private coreLogger(index: CoreIndex): Logger {
    const where = index === 0 ? '' : CORE1;
    const core = () => (index === 0 ? this.rp2040.core : this.core1.core);
    return {
      debug: () => undefined,
      // rp2040js runs SEV as a no-op that logs 'SEV' (cortex-m0-core.ts); the event is delivered here.
      info: (_component, message) => (message === 'SEV' ? this.sendEvent(index) : undefined),
      warn: (component, message) => libraryMessage(core(), where, 'warn', component, message, (m) => this.noteUnmodelled(m)),
      error: (component, message) => libraryMessage(core(), where, 'error', component, message, (m) => this.noteUnmodelled(m)),
    };
  }

  /**
   * SEV on core `from` (ARMv6-M: the event reaches every core, its own included): a core asleep
   * in WFE wakes, any other core has its event register set so that its next WFE returns at once.
   */
  private sendEvent(from: CoreIndex) {
    const cores = this.core1.state === 'running' ? [this.rp2040.core, this.core1.core] : [this.rp2040.core];
    for (const [index, core] of cores.entries()) {
      if (index !== from && core.waiting && this.rp2040.readUint16(core.PC - 2) === WFE_OPCODE) core.waiting = false;
      else core.eventRegistered = true;
    }
  }

  /** A core's SIO_IRQ_PROC line follows its side of the FIFOs; a word for core 1 in the pen ends the single-core loop. */
  private fifoChanged(side: CoreIndex) {
    const level = this.fifo.irqLevel(side);
    if (side === 0) {
      this.rp2040.core.setInterrupt(SIO_IRQ_PROC[0], level);
      return;
    }
    // Called from SecondCore's constructor before it is assigned.
    if (!this.core1) return;
    this.core1.core.setInterrupt(SIO_IRQ_PROC[1], level);
    // Called from the constructor (the pen's first 0 to core 0) before the turns exist.
    if (this.core1.runnable && this.turns) this.turns.breakLoop = true;
  }

  private halted(halt: EngineHalt | undefined) {
    if (halt && !this.halt) {
      this.halt = halt;
      this.turns.halt();
    }
  }

  get nanos(): number {
    return this.clock.nanos;
  }

  get clockHz(): number {
    return this.rp2040.clkSys;
  }

  get asleepForever(): boolean {
    return this.rp2040.core.waiting && !this.core1.runnable && this.clock.nextAlarmNanos === undefined;
  }

  get pendingRxBytes(): number {
    return this.rxQueue.length;
  }

  /** Distinct unmodelled accesses seen so far, with counts. */
  get unmodelledAccesses(): ReadonlyMap<string, number> {
    return this.unmodelled;
  }

  get instructions(): number {
    return this.turns.instructions;
  }

  get sleptNanos(): number {
    return this.turns.sleptNanos;
  }

  advance(targetNanos: number): EngineHalt | undefined {
    if (this.halt) return this.halt;
    this.outputReady = false;
    try {
      this.turns.run(targetNanos, () => this.outputReady || this.halt !== undefined);
    } catch (err) {
      if (!(err instanceof HardFault)) throw err;
      this.halted({ reason: 'crashed', message: err.message });
    }
    return this.halt;
  }

  takeUartOutput(options: { partial: boolean }): EngineUartChunk | undefined {
    return this.tx.take(options);
  }

  /** A GDB stub on rp2040js's GDB server (sim/rp2040/rp2040-gdb-target.ts). */
  openGdb(io: SimGdbIo): SimGdbTarget {
    return new Rp2040GdbTarget(this, io);
  }

  queueUartInput(bytes: Uint8Array): void {
    const idle = this.rxQueue.length === 0 && !this.rxAlarm.scheduled;
    this.rxQueue.push(...bytes);
    // The pending alarm also keeps a sleeping core from skipping past the byte's arrival.
    if (idle && this.rxQueue.length > 0) this.rxAlarm.schedule(this.charNanos());
  }

  private charNanos(): number {
    const uart = this.rp2040.uart[this.uartIndex]!;
    const baud = uart.baudDivider > 0 ? uart.baudRate : DEFAULT_BAUD;
    return (BITS_PER_CHAR * 1e9) / baud;
  }

  private deliverRxByte() {
    const byte = this.rxQueue.shift();
    if (byte === undefined) return;
    const uart = this.rp2040.uart[this.uartIndex]!;
    // rp2040js drops a byte pushed into a full FIFO without a trace; count it as the overrun it is.
    if (uart.readUint32(UARTFR) & UARTFR_RXFF) this.droppedRxBytes++;
    else uart.feedByte(byte);
    if (this.rxQueue.length > 0) this.rxAlarm.schedule(this.charNanos());
  }

  private noteUnmodelled(message: string) {
    const count = (this.unmodelled.get(message) ?? 0) + 1;
    this.unmodelled.set(message, count);
    this.options.onUnmodelled(message, count);
  }
}
