import { RP2040 } from 'rp2040js';
import type { Board } from '../boards/board-schema.js';
import { loadSegments, type LoadTarget, type PlacedSegment } from './load-segments.js';
import { RP2040_BOOTROM_BYTES, RP2040_BOOTROM_HINT } from './rp2040-bootrom.js';
import { BOOT2_VECTOR_TABLE, checkBoot2, hasBoot2Stage } from './rp2040/boot2.js';
import { OwnBootrom } from './rp2040/own-bootrom.js';
import type { RomMachine } from './rp2040/rom-functions.js';
import { Rp2040GdbTarget } from './rp2040/rp2040-gdb-target.js';
import { Rp2040Pins } from './rp2040/rp2040-pins.js';
import { SimClock } from './sim-clock.js';
import type { EngineHalt, EngineUartChunk, SimEngine, SimImage, UnmodelledListener } from './sim-engine.js';
import type { SimGdbIo, SimGdbTarget } from './sim-gdb-target.js';
import { SimError } from './sim-error.js';
import { UartOutputBuffer } from './uart-output-buffer.js';

const FLASH_START = 0x10000000;
const SRAM_START = 0x20000000;
const UARTFR = 0x18;
const UARTFR_RXFF = 1 << 6;
/** 115200 8N1 until the firmware programs the divider: ten bit times per character. */
const DEFAULT_BAUD = 115_200;
const BITS_PER_CHAR = 10;

/** ARM semihosting (ARM IHI 0093): `bkpt 0xab`, operation in r0, argument in r1. */
const SEMIHOSTING_BKPT = 0xab;
const SYS_EXIT = 0x18;
const SYS_EXIT_EXTENDED = 0x20;
const ADP_STOPPED_APPLICATION_EXIT = 0x20026;
/** Core cycles charged for one call into the own boot ROM (its functions run in TypeScript: not the ROM's timing). */
const ROM_CALL_CYCLES = 20;
/** SIO inter-core FIFO registers (RP2040 datasheet §2.3.1.7): FIFO_ST, FIFO_WR, FIFO_RD. */
const SIO_FIFO_OFFSETS = new Set([0x50, 0x54, 0x58]);
/** Built once: the image is the same for every engine, and its entries hold no state. */
let ownBootrom: OwnBootrom | undefined;

export interface Rp2040EngineOptions {
  /** The B1 boot ROM as 32-bit words, when the bench has one; without it the project's own ROM is used. */
  bootrom?: Uint32Array;
  /** Called for accesses rp2040js does not model (unimplemented registers). */
  onUnmodelled: UnmodelledListener;
}

const hex = (n: number) => `0x${(n >>> 0).toString(16).padStart(8, '0')}`;

/** Thrown from inside an instruction to unwind rp2040js when the real chip would fault. */
class HardFault extends Error {}

/**
 * One RP2040 on rp2040js with an image loaded, held at reset release.
 *
 * Boot: bare-metal images (a vector table at 0x10000000) start as if the ROM had handed over:
 * VTOR = 0x10000000, SP = word 0, PC = word 1 (Thumb bit cleared). Images with a boot2 stage
 * (Pico SDK, arduino-pico, MicroPython, Rust): with a configured B1 ROM, the core starts in
 * boot2 at 0x10000000 as the ROM would; without one, the project's own ROM (decision 0251) is
 * mapped, boot2's CRC is checked as the ROM checks it, and the core starts as boot2 leaves it:
 * VTOR = 0x10000100, SP and PC from that vector table. Calls into the own ROM are trapped
 * before they execute and run in TypeScript (sim/rp2040/).
 *
 * Faults: rp2040js has no HardFault; where the real core would take one (undefined instruction,
 * bus error on an unmapped address, unaligned access, `udf`, and `bkpt` with no debugger
 * attached), the engine halts with `crashed`. Exits follow ARM semihosting (SYS_EXIT,
 * SYS_EXIT_EXTENDED) as under QEMU (docs/firmware.md).
 */
export class Rp2040Engine implements SimEngine {
  readonly clock = new SimClock();
  readonly rp2040: RP2040;
  readonly pins: Rp2040Pins;
  readonly placed: PlacedSegment[];
  instructions = 0;
  sleptNanos = 0;
  droppedRxBytes = 0;
  /** The project's own boot ROM, mapped when no B1 ROM file is configured. */
  private readonly ownRom: OwnBootrom | undefined;
  private readonly romMachine: RomMachine;
  private readonly uartIndex: number;
  private readonly tx = new UartOutputBuffer();
  private readonly rxQueue: number[] = [];
  private readonly rxAlarm;
  private nanosPerCycle: number;
  private halt: EngineHalt | undefined;
  private outputReady = false;
  private readonly unmodelled = new Map<string, number>();

  constructor(
    board: Board,
    image: SimImage,
    private readonly options: Rp2040EngineOptions,
  ) {
    const uartName = board.backends.sim?.uart ?? 'uart0';
    this.uartIndex = board.mcu.uarts.findIndex((u) => u.name === uartName);
    if (this.uartIndex < 0 || this.uartIndex > 1) {
      throw new SimError('unavailable', `board ${board.id}: sim.uart "${uartName}" is not one of the RP2040's UARTs (uart0, uart1)`);
    }
    const boot2Image = hasBoot2Stage(image.elf);

    this.rp2040 = new RP2040(this.clock);
    this.pins = new Rp2040Pins(this.rp2040);
    this.rp2040.logger = {
      debug: () => undefined,
      info: () => undefined,
      warn: (component, message) => this.libraryMessage('warn', component, message),
      error: (component, message) => this.libraryMessage('error', component, message),
    };
    // rp2040js `loadBootrom` resets the chip and erases flash to 0xff; the image is loaded after it.
    if (options.bootrom) {
      this.rp2040.loadBootrom(options.bootrom);
    } else {
      ownBootrom ??= new OwnBootrom();
      this.ownRom = ownBootrom;
      this.rp2040.loadBootrom(ownBootrom.words);
      this.trapInterCoreFifo();
    }

    const region = (name: string) => board.mcu.memory.find((m) => m.name === name);
    const flashBytes = Math.min(region('flash')?.sizeBytes ?? 0x200000, this.rp2040.flash.length);
    const sramBytes = Math.min(region('sram')?.sizeBytes ?? this.rp2040.sram.length, this.rp2040.sram.length);
    const targets: LoadTarget[] = [
      { name: 'flash', start: FLASH_START, bytes: this.rp2040.flash.subarray(0, flashBytes) },
      { name: 'sram', start: SRAM_START, bytes: this.rp2040.sram.subarray(0, sramBytes) },
    ];
    this.placed = loadSegments(image, targets);

    const core = this.rp2040.core;
    const vectorProblem = (at: number) => {
      const sp = this.rp2040.readUint32(at);
      const reset = this.rp2040.readUint32(at + 4);
      const inFlash = reset >= FLASH_START && reset < FLASH_START + flashBytes;
      const inSram = reset >= SRAM_START && reset < SRAM_START + sramBytes;
      if ((reset & 1) === 1 && (inFlash || inSram) && sp >= SRAM_START && sp <= SRAM_START + this.rp2040.sram.length) return undefined;
      return `initial SP ${hex(sp)} must lie in SRAM, reset handler ${hex(reset)} must be a Thumb address in flash or SRAM`;
    };
    const boot2 = checkBoot2(this.rp2040.flash);
    // An image without boot2 markers (no section headers, say) still boots through boot2 when its first 256 bytes carry a valid CRC and no vector table.
    const viaBoot2 = boot2Image || (vectorProblem(FLASH_START) !== undefined && boot2.valid);
    if (viaBoot2 && options.bootrom) {
      // The real ROM's reset handler checks boot2 and runs it; SP stays the ROM's initial SP.
      core.PC = FLASH_START;
    } else if (viaBoot2) {
      if (!boot2.valid) {
        throw new SimError(
          'bad-image',
          `the boot2 stage (the first 256 bytes of flash at ${hex(FLASH_START)}) fails the boot ROM's CRC32 check: bytes 252..255 hold ` +
            `${hex(boot2.storedCrc)} but the CRC of bytes 0..251 is ${hex(boot2.computedCrc)}; the chip would not run this image ` +
            `(it would wait in USB boot mode). Rebuild it so the toolchain pads and checksums boot2 (the Pico SDK's pad_checksum step)`,
        );
      }
      const problem = vectorProblem(BOOT2_VECTOR_TABLE);
      if (problem) {
        throw new SimError('bad-image', `the image has a boot2 stage but no vector table where boot2 leaves the core, at ${hex(BOOT2_VECTOR_TABLE)} (${problem})`);
      }
      // What boot2 does last: VTOR at the image's vector table, then SP and the reset handler from it.
      core.VTOR = BOOT2_VECTOR_TABLE;
      core.SP = this.rp2040.readUint32(BOOT2_VECTOR_TABLE);
      core.PC = this.rp2040.readUint32(BOOT2_VECTOR_TABLE + 4) & ~1;
    } else {
      const problem = vectorProblem(FLASH_START);
      if (problem) {
        throw new SimError(
          'bad-image',
          `the image does not start with a Cortex-M vector table at ${hex(FLASH_START)} (${problem}), nor with a boot2 stage ` +
            `(a .boot2 section, or 256 bytes whose last 4 are their CRC32)`,
        );
      }
      core.VTOR = FLASH_START;
      core.SP = this.rp2040.readUint32(FLASH_START);
      core.PC = this.rp2040.readUint32(FLASH_START + 4) & ~1;
    }

    this.nanosPerCycle = 1e9 / this.rp2040.clkSys;
    this.rp2040.addClockListener((clkSys) => {
      this.nanosPerCycle = 1e9 / clkSys;
    });
    // Capture is attached before the first instruction runs.
    this.rp2040.uart[this.uartIndex]!.onByte = (value) => {
      if (this.tx.push(value, this.clock.nanos)) this.outputReady = true;
    };
    this.rp2040.onBreak = (code) => this.onBreak(code);
    this.rxAlarm = this.clock.createAlarm(() => this.deliverRxByte());
    const chip = this.rp2040;
    this.romMachine = {
      regs: {
        r: core.registers,
        setFlags: ({ n, z, c, v }) => {
          core.N = n;
          core.Z = z;
          core.C = c;
          core.V = v;
        },
      },
      read8: (address) => chip.readUint8(address >>> 0),
      read16: (address) => chip.readUint16(address >>> 0),
      write8: (address, value) => chip.writeUint8(address >>> 0, value),
      flash: chip.flash,
    };
  }

  get nanos(): number {
    return this.clock.nanos;
  }

  get clockHz(): number {
    return this.rp2040.clkSys;
  }

  get asleepForever(): boolean {
    return this.rp2040.core.waiting && this.clock.nextAlarmNanos === undefined;
  }

  get pendingRxBytes(): number {
    return this.rxQueue.length;
  }

  /** Distinct unmodelled accesses seen so far, with counts. */
  get unmodelledAccesses(): ReadonlyMap<string, number> {
    return this.unmodelled;
  }

  advance(targetNanos: number): EngineHalt | undefined {
    if (this.halt) return this.halt;
    this.outputReady = false;
    const { core } = this.rp2040;
    const clock = this.clock;
    try {
      while (clock.nanos < targetNanos && !this.outputReady && !this.halt) {
        if (core.waiting) {
          // WFI/WFE: nothing runs until an interrupt; jump to the next scheduled event.
          const next = clock.nextAlarmNanos;
          const to = next === undefined || next > targetNanos ? targetNanos : next;
          this.sleptNanos += to - clock.nanos;
          clock.advanceTo(to);
          continue;
        }
        if (core.PC < RP2040_BOOTROM_BYTES && this.ownRom) {
          clock.tick(this.callOwnRom() * this.nanosPerCycle);
          continue;
        }
        const cycles = core.executeInstruction();
        this.instructions++;
        clock.tick(cycles * this.nanosPerCycle);
      }
    } catch (err) {
      if (!(err instanceof HardFault)) throw err;
      this.halt = { reason: 'crashed', message: err.message };
    }
    return this.halt;
  }

  /** Runs the own-ROM function whose entry the core is at, as if it had been called; returns the cycles charged. */
  private callOwnRom(): number {
    const core = this.rp2040.core;
    const entry = this.ownRom!.entryAt(core.PC);
    if (!entry) {
      throw new SimError(
        'bad-image',
        `execution reached ${hex(core.PC)} in the boot ROM, which is not the entry of a function the simulator's own boot ROM provides ` +
          `(docs/backends/sim.md lists them; firmware that jumps into the ROM's internals needs the real one: ${RP2040_BOOTROM_HINT}); ` +
          `bare-metal firmware gets here only through a null or bad function pointer`,
      );
    }
    this.instructions++;
    const outcome = entry.run(this.romMachine);
    if (outcome === undefined) core.BXWritePC(core.LR);
    else if (outcome.kind === 'jump') {
      core.LR = outcome.lr;
      core.PC = outcome.pc & ~1;
    } else if (outcome.kind === 'halt') {
      this.halt = { reason: 'crashed', message: outcome.message };
    } else {
      // Stays at this address; an interrupt wakes the core, and its return lands here again.
      core.waiting = true;
    }
    return ROM_CALL_CYCLES;
  }

  /**
   * rp2040js models one core and no inter-core FIFO (it would read 0xffffffff for ever): any
   * access to it means the firmware is talking to core 1, so it stops with a clear error rather
   * than spinning silently.
   */
  private trapInterCoreFifo() {
    const sio = this.rp2040.sio;
    const read = sio.readUint32.bind(sio);
    const write = sio.writeUint32.bind(sio);
    const refuse = (offset: number): never => {
      throw new SimError(
        'bad-image',
        `core 1 is not modelled: the firmware ${offset === 0x54 ? 'wrote to' : 'read'} the inter-core FIFO (SIO ${offset === 0x50 ? 'FIFO_ST' : offset === 0x54 ? 'FIFO_WR' : 'FIFO_RD'}) ` +
          `near PC ${hex(this.rp2040.core.PC)}, as multicore_launch_core1 and the multicore FIFO functions do; the simulator runs core 0 only`,
      );
    };
    sio.readUint32 = (offset: number) => (SIO_FIFO_OFFSETS.has(offset) ? refuse(offset) : read(offset));
    sio.writeUint32 = (offset: number, value: number) => (SIO_FIFO_OFFSETS.has(offset) ? refuse(offset) : write(offset, value));
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

  private onBreak(code: number) {
    const core = this.rp2040.core;
    // rp2040js reports UDF through the same hook as BKPT; on the chip UDF is a HardFault.
    // The PC has moved past the 16-bit opcode (both UDF encodings start with a 16-bit word).
    const opcode = this.rp2040.readUint16(core.PC - 2);
    if (opcode >> 8 !== 0xbe) {
      this.halt = { reason: 'crashed', message: `HardFault: undefined instruction (udf #${code}) near PC ${hex(core.PC)}` };
      return;
    }
    if (code === SEMIHOSTING_BKPT) {
      const op = core.registers[0]!;
      const arg = core.registers[1]!;
      if (op === SYS_EXIT) {
        // AArch32 SYS_EXIT passes the reason itself; QEMU maps ApplicationExit to 0, anything else to 1.
        this.halt = { reason: 'exited', exitCode: arg === ADP_STOPPED_APPLICATION_EXIT ? 0 : 1 };
      } else if (op === SYS_EXIT_EXTENDED) {
        const reason = this.rp2040.readUint32(arg);
        const subcode = this.rp2040.readUint32(arg + 4);
        this.halt = { reason: 'exited', exitCode: reason === ADP_STOPPED_APPLICATION_EXIT ? subcode | 0 : 1 };
      } else {
        this.noteUnmodelled(`semihosting operation 0x${op.toString(16)} is not modelled (only SYS_EXIT and SYS_EXIT_EXTENDED); it returned -1`);
        core.registers[0] = 0xffffffff;
      }
      return;
    }
    // Without a debugger a BKPT escalates to HardFault on the chip.
    this.halt = { reason: 'crashed', message: `HardFault: bkpt #${code} with no debugger attached, near PC ${hex(core.PC)}` };
  }

  private libraryMessage(level: 'warn' | 'error', component: string, message: string) {
    const pc = hex(this.rp2040.core.PC);
    if (/not implemented yet/.test(message)) throw new HardFault(`HardFault: undefined instruction near PC ${pc} (${component}: ${message})`);
    // rp2040js logs errors for what the chip faults on, such as an unaligned word access.
    if (level === 'error') throw new HardFault(`HardFault near PC ${pc}: ${component}: ${message}`);
    const invalid = /(?:invalid memory address|undefined address): ([0-9a-f]+)/.exec(message);
    if (invalid) {
      const address = parseInt(invalid[1]!, 16);
      const fetch = Math.abs(address - this.rp2040.core.PC) <= 4;
      throw new HardFault(
        fetch
          ? `HardFault: instruction fetch from ${hex(address)}, outside ROM, flash and SRAM`
          : `HardFault: bus error near PC ${pc}: access to unmapped address ${hex(address)}`,
      );
    }
    this.noteUnmodelled(`${component}: ${message}`);
  }

  private noteUnmodelled(message: string) {
    const count = (this.unmodelled.get(message) ?? 0) + 1;
    this.unmodelled.set(message, count);
    this.options.onUnmodelled(message, count);
  }
}
