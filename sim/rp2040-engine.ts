import { RP2040 } from 'rp2040js';
import type { Board } from '../boards/board-schema.js';
import { loadSegments, type LoadTarget, type PlacedSegment } from './load-segments.js';
import { isPicoSdkImage, RP2040_BOOTROM_BYTES, RP2040_BOOTROM_HINT } from './rp2040-bootrom.js';
import { SimClock } from './sim-clock.js';
import type { EngineHalt, EngineUartChunk, SimEngine, SimImage, UnmodelledListener } from './sim-engine.js';
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

export interface Rp2040EngineOptions {
  /** The B1 boot ROM as 32-bit words, when the bench has one. */
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
 * Boot: with no bootrom, as bare-metal hardware would after the ROM hands over: VTOR =
 * 0x10000000, SP = word 0, PC = word 1 (Thumb bit cleared). Pico SDK images (boot2 stage) need
 * the bootrom: it is loaded first (rp2040js `loadBootrom` erases flash to 0xff), then the image,
 * and the core starts in boot2 at 0x10000000 as the ROM would.
 *
 * Faults: rp2040js has no HardFault; where the real core would take one (undefined instruction,
 * bus error on an unmapped address, unaligned access, `udf`, and `bkpt` with no debugger
 * attached), the engine halts with `crashed`. Exits follow ARM semihosting (SYS_EXIT,
 * SYS_EXIT_EXTENDED) as under QEMU (docs/firmware.md).
 */
export class Rp2040Engine implements SimEngine {
  readonly clock = new SimClock();
  readonly rp2040: RP2040;
  readonly placed: PlacedSegment[];
  instructions = 0;
  sleptNanos = 0;
  droppedRxBytes = 0;
  private readonly hasBootrom: boolean;
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
    const sdkImage = isPicoSdkImage(image.elf);
    if (sdkImage && !options.bootrom) {
      throw new SimError('bad-image', `this image is a Pico SDK binary (it has a boot2 stage and calls the RP2040 boot ROM); ${RP2040_BOOTROM_HINT}`);
    }

    this.rp2040 = new RP2040(this.clock);
    this.rp2040.logger = {
      debug: () => undefined,
      info: () => undefined,
      warn: (component, message) => this.libraryMessage('warn', component, message),
      error: (component, message) => this.libraryMessage('error', component, message),
    };
    this.hasBootrom = options.bootrom !== undefined;
    if (options.bootrom) this.rp2040.loadBootrom(options.bootrom);
    else this.rp2040.flash.fill(0xff);

    const region = (name: string) => board.mcu.memory.find((m) => m.name === name);
    const flashBytes = Math.min(region('flash')?.sizeBytes ?? 0x200000, this.rp2040.flash.length);
    const sramBytes = Math.min(region('sram')?.sizeBytes ?? this.rp2040.sram.length, this.rp2040.sram.length);
    const targets: LoadTarget[] = [
      { name: 'flash', start: FLASH_START, bytes: this.rp2040.flash.subarray(0, flashBytes) },
      { name: 'sram', start: SRAM_START, bytes: this.rp2040.sram.subarray(0, sramBytes) },
    ];
    this.placed = loadSegments(image, targets);

    const core = this.rp2040.core;
    if (sdkImage) {
      // The ROM's reset handler would check boot2 and jump to it; SP stays the ROM's initial SP.
      core.PC = FLASH_START;
    } else {
      const sp = this.rp2040.flashView.getUint32(0, true);
      const reset = this.rp2040.flashView.getUint32(4, true);
      const inFlash = reset >= FLASH_START && reset < FLASH_START + flashBytes;
      const inSram = reset >= SRAM_START && reset < SRAM_START + sramBytes;
      if ((reset & 1) === 0 || !(inFlash || inSram) || sp < SRAM_START || sp > SRAM_START + this.rp2040.sram.length) {
        throw new SimError(
          'bad-image',
          `the image does not start with a Cortex-M vector table at ${hex(FLASH_START)} (initial SP ${hex(sp)} must lie in SRAM, ` +
            `reset handler ${hex(reset)} must be a Thumb address in flash or SRAM); if it is a Pico SDK binary without symbols, ${RP2040_BOOTROM_HINT}`,
        );
      }
      core.VTOR = FLASH_START;
      core.SP = sp;
      core.PC = reset & ~1;
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
        if (core.PC < RP2040_BOOTROM_BYTES && !this.hasBootrom) {
          throw new SimError(
            'bad-image',
            `execution reached the RP2040 boot ROM (PC ${hex(core.PC)}) but no bootrom is loaded: firmware that calls ROM functions ` +
              `(Pico SDK binaries do) needs it, so ${RP2040_BOOTROM_HINT}; bare-metal firmware gets here only through a null or bad function pointer`,
          );
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

  takeUartOutput(options: { partial: boolean }): EngineUartChunk | undefined {
    return this.tx.take(options);
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
