import {
  adcConfig,
  AVRADC,
  AVRClock,
  AVREEPROM,
  avrInstruction,
  AVRIOPort,
  AVRSPI,
  AVRTimer,
  AVRTWI,
  AVRUSART,
  AVRWatchdog,
  clockConfig,
  CPU,
  EEPROMMemoryBackend,
  eepromConfig,
  portBConfig,
  portCConfig,
  portDConfig,
  spiConfig,
  timer0Config,
  timer1Config,
  timer2Config,
  twiConfig,
  usart0Config,
  watchdogConfig,
} from 'avr8js';
import type { Board } from '../boards/board-schema.js';
import { AvrGdbTarget } from './avr/avr-gdb-target.js';
import { AvrPins } from './avr/avr-pins.js';
import { UsartTransmitter, usartCyclesPerChar } from './avr/usart-transmitter.js';
import { loadSegments, type LoadTarget, type PlacedSegment } from './load-segments.js';
import type { EngineHalt, EngineUartChunk, SimEngine, SimImage, UnmodelledListener } from './sim-engine.js';
import type { SimGdbIo, SimGdbTarget } from './sim-gdb-target.js';
import { SimError } from './sim-error.js';
import { StateSnapshot } from './state-snapshot.js';
import { UartOutputBuffer } from './uart-output-buffer.js';

/** AVR instruction words the engine watches for (AVR Instruction Set Manual). */
const OP_BREAK = 0x9598;
const OP_SLEEP = 0x9588;
/** `rjmp .`: a jump to itself, which is how avr-libc's `_exit` ends (`cli` then `rjmp .`). */
const OP_RJMP_SELF = 0xcfff;
const SREG_I = 0x80;
/**
 * The hilbench AVR mailbox (docs/firmware.md): the firmware writes its argument to GPIOR1 and a
 * command to GPIOR2. General-purpose I/O registers do nothing on silicon, so the same image runs
 * on a real Uno.
 */
const GPIOR1 = 0x4a;
const GPIOR2 = 0x4b;
const MAILBOX_EXIT = 0xe7;
const MAILBOX_CRASH = 0xc5;
const UCSRA_RXC = 0x80;
const UCSRB_RXEN = 0x10;

const hex = (n: number) => `0x${n.toString(16).padStart(4, '0')}`;

/** Data addresses 0x20..0xff are the I/O registers (ATmega328P datasheet §36, register summary). */
const IO_START = 0x20;
const IO_END = 0x100;
/**
 * Registers the engine models beyond the peripheral configs: the stack pointer and SREG (the
 * core), GPIOR0-2 (plain storage on silicon, and the mailbox) and SMCR (sleep is handled here).
 */
const CORE_REGISTERS = [0x5d, 0x5e, 0x5f, 0x3e, 0x4a, 0x4b, 0x53];
/** Names of registers that exist but avr8js does not model, for readable reports. */
const UNMODELLED_NAMES: Record<number, string> = {
  0x43: 'GTCCR',
  0x50: 'ACSR',
  0x55: 'MCUCR',
  0x57: 'SPMCSR',
  0x64: 'PRR',
  0x66: 'OSCCAL',
  0x7f: 'DIDR1',
  0xb6: 'ASSR',
};

/**
 * The I/O addresses the attached avr8js peripherals own: every upper-case key of their configs
 * (TCCRA, UDR, PCMSK, ...) that holds an I/O address, and the high byte of 16-bit registers.
 */
function modelledRegisters(configs: readonly object[]): Set<number> {
  const owned = new Set<number>(CORE_REGISTERS);
  const visit = (value: unknown, key: string) => {
    if (typeof value === 'number') {
      if (/^[A-Z][A-Z0-9]*$/.test(key) && value >= IO_START && value < IO_END) owned.add(value);
      return;
    }
    if (typeof value === 'object' && value !== null) for (const [k, v] of Object.entries(value)) visit(v, k);
  };
  for (const config of configs) visit(config, '');
  // 16-bit registers of timer 1 are listed by their low byte.
  for (const low of [timer1Config.TCNT, timer1Config.OCRA, timer1Config.OCRB, timer1Config.ICR]) owned.add(low + 1);
  return owned;
}

/**
 * The cycle count of avr8js's next clock event (timer overflow, UART character), read from its
 * private queue (`CPU.nextClockEvent`, avr8js 0.21) and checked at run time: if a later avr8js
 * renames it, sleeping simply costs host time again (sleep tests then fail, loudly).
 */
function nextClockEventCycles(cpu: CPU): number | undefined {
  const next: unknown = Reflect.get(cpu, 'nextClockEvent');
  if (typeof next === 'object' && next !== null && 'cycles' in next && typeof next.cycles === 'number') return next.cycles;
  return undefined;
}

/**
 * One ATmega328P on avr8js with an image loaded, held at reset release (PC = reset vector 0).
 *
 * The chip has neither semihosting nor faults, so the stops are conventions (docs/firmware.md,
 * docs/backends/sim.md): the GPIOR mailbox (exit with GPIOR1, or crash); also exited, with status
 * r24 (where avr-gcc passes `exit`'s argument), on `break`, on `sleep` with interrupts off
 * (simavr's convention) and on `rjmp .` with interrupts off (how avr-libc's `_exit` ends);
 * crashed when the PC leaves the program that was loaded (a jump into erased flash). `sleep` with
 * interrupts on skips to the next timer or UART event instead of spinning.
 */
export class AvrEngine implements SimEngine {
  readonly cpu: CPU;
  readonly usart: AVRUSART;
  readonly transmitter: UsartTransmitter;
  readonly pins: AvrPins;
  readonly placed: PlacedSegment[];
  readonly clockHz: number;
  instructions = 0;
  sleptNanos = 0;
  droppedRxBytes = 0;
  private readonly progMem: Uint16Array;
  /** Program memory words that hold loaded bytes; anything past is erased flash. */
  private readonly programEndWord: number;
  private readonly nanosPerCycle: number;
  private readonly tx = new UartOutputBuffer();
  private readonly rxQueue: number[] = [];
  private rxScheduled = false;
  private halt: EngineHalt | undefined;
  private outputReady = false;
  private sleeping = false;
  private readonly unmodelled = new Map<string, number>();
  /** The chip and engine as built, the image in program memory: what `reset` puts back in place (decision 0821). */
  private readonly asBuilt = new StateSnapshot();

  constructor(
    board: Board,
    image: SimImage,
    private readonly options: { onUnmodelled: UnmodelledListener },
  ) {
    const mcu = board.mcu;
    const flash = mcu.memory.find((m) => m.kind === 'flash');
    const sram = mcu.memory.find((m) => m.kind === 'ram');
    if (!flash || !sram) throw new SimError('unavailable', `MCU ${mcu.id} has no flash or RAM region in its memory map`);
    const uartName = board.backends.sim?.uart ?? 'usart0';
    if (uartName !== 'usart0') throw new SimError('unavailable', `board ${board.id}: sim.uart "${uartName}" is not modelled; avr8js runs USART0 (usart0) only`);
    this.clockHz = mcu.clockHz;
    this.nanosPerCycle = 1e9 / mcu.clockHz;

    this.progMem = new Uint16Array(flash.sizeBytes / 2);
    // Erased flash reads 0xffff, as on the chip.
    this.progMem.fill(0xffff);
    // EEPROM contents are never programmed (backends/image-check.ts refuses them): only flash.
    const targets: LoadTarget[] = [{ name: 'flash', start: flash.start, bytes: new Uint8Array(this.progMem.buffer) }];
    this.placed = loadSegments(image, targets);
    const programEndByte = Math.max(...this.placed.filter((p) => p.target === 'flash').map((p) => p.paddr + p.sizeBytes), 0);
    if (programEndByte === 0) throw new SimError('bad-image', 'the image places no bytes in program memory (flash at 0)');
    this.programEndWord = Math.ceil(programEndByte / 2);

    // Data memory: 32 registers + 224 I/O registers, then SRAM (RAMEND 0x8ff on the ATmega328P).
    this.cpu = new CPU(this.progMem, sram.sizeBytes);
    const clock = new AVRClock(this.cpu, mcu.clockHz, clockConfig);
    new AVRTimer(this.cpu, timer0Config);
    new AVRTimer(this.cpu, timer1Config);
    new AVRTimer(this.cpu, timer2Config);
    this.pins = new AvrPins(this.cpu, [
      { letter: 'B', port: new AVRIOPort(this.cpu, portBConfig), pinRegister: portBConfig.PIN, width: 8 },
      { letter: 'C', port: new AVRIOPort(this.cpu, portCConfig), pinRegister: portCConfig.PIN, width: 7 },
      { letter: 'D', port: new AVRIOPort(this.cpu, portDConfig), pinRegister: portDConfig.PIN, width: 8 },
    ]);
    const eeprom = mcu.memory.find((m) => m.kind === 'eeprom');
    new AVREEPROM(this.cpu, new EEPROMMemoryBackend(eeprom?.sizeBytes ?? 1024), eepromConfig);
    new AVRSPI(this.cpu, spiConfig, mcu.clockHz);
    new AVRTWI(this.cpu, twiConfig, mcu.clockHz);
    new AVRADC(this.cpu, adcConfig);
    new AVRWatchdog(this.cpu, watchdogConfig, clock);
    this.usart = new AVRUSART(this.cpu, usart0Config, mcu.clockHz);
    this.reportUnmodelledRegisters([
      timer0Config,
      timer1Config,
      timer2Config,
      usart0Config,
      portBConfig,
      portCConfig,
      portDConfig,
      spiConfig,
      twiConfig,
      adcConfig,
      eepromConfig,
      watchdogConfig,
      clockConfig,
    ]);
    this.cpu.writeHooks[GPIOR2] = (value) => {
      const argument = this.cpu.data[GPIOR1]!;
      if (value === MAILBOX_EXIT) this.halt = { reason: 'exited', exitCode: argument };
      else if (value === MAILBOX_CRASH) this.halt = { reason: 'crashed', message: `the firmware reported a crash through the GPIOR mailbox (code ${argument})` };
      return false;
    };
    // Bytes are stamped when their start bit goes out, so timestamps follow the baud rate.
    this.transmitter = new UsartTransmitter(this.cpu, usart0Config, (value, atCycles) => {
      if (this.tx.push(value, atCycles * this.nanosPerCycle)) this.outputReady = true;
    });
    // Program memory (32 KiB) is copied with the rest: a reset needs no new CPU, peripherals or hooks.
    this.asBuilt.take(this, { shared: new Set([options]), ownerRestored: new Set() });
  }

  /**
   * Back to the chip as `new AvrEngine` leaves it (core at the reset vector, every peripheral,
   * data memory, EEPROM, program memory, the UART buffers and the counters as built), on the same
   * objects: no avr8js CPU, peripherals or hooks built again.
   */
  reset(): void {
    this.asBuilt.restore();
  }

  get nanos(): number {
    return this.cpu.cycles * this.nanosPerCycle;
  }

  /** Distinct unmodelled accesses seen so far, with counts. */
  get unmodelledAccesses(): ReadonlyMap<string, number> {
    return this.unmodelled;
  }

  /**
   * avr8js stores writes to registers it does not model without a word; hook every I/O address
   * no attached peripheral owns, so those accesses are counted and reported instead. The
   * access itself still behaves as plain storage.
   */
  private reportUnmodelledRegisters(configs: readonly object[]) {
    const owned = modelledRegisters(configs);
    const { cpu } = this;
    for (let address = IO_START; address < IO_END; address++) {
      if (owned.has(address)) continue;
      const name = UNMODELLED_NAMES[address] ? `${UNMODELLED_NAMES[address]} (${hex(address)})` : `I/O address ${hex(address)}`;
      if (!cpu.writeHooks[address]) {
        cpu.writeHooks[address] = (value) => {
          this.noteUnmodelled(`ATmega328P: write to ${name}, which avr8js does not model (value 0x${value.toString(16)})`);
          return false;
        };
      }
      if (!cpu.readHooks[address]) {
        cpu.readHooks[address] = (addr) => {
          this.noteUnmodelled(`ATmega328P: read from ${name}, which avr8js does not model`);
          return cpu.data[addr]!;
        };
      }
    }
  }

  private noteUnmodelled(message: string) {
    const count = (this.unmodelled.get(message) ?? 0) + 1;
    this.unmodelled.set(message, count);
    this.options.onUnmodelled(message, count);
  }

  get asleepForever(): boolean {
    return this.sleeping && this.nextEventCycles() === undefined && this.cpu.nextInterrupt < 0;
  }

  get pendingRxBytes(): number {
    return this.rxQueue.length;
  }

  /**
   * `limits` serve a debugger (sim/avr/avr-gdb-target.ts): stop before executing an instruction at
   * one of `stopAtWords` (word addresses; never before the first one, so a resume from a
   * breakpoint moves on), or after `maxInstructions` (a single step).
   */
  advance(targetNanos: number, limits: { stopAtWords?: ReadonlySet<number>; maxInstructions?: number } = {}): EngineHalt | undefined {
    if (this.halt) return this.halt;
    this.outputReady = false;
    const { cpu, progMem } = this;
    const targetCycles = Math.ceil(targetNanos / this.nanosPerCycle);
    const { stopAtWords, maxInstructions = Infinity } = limits;
    let executed = 0;
    while (cpu.cycles < targetCycles && !this.outputReady && !this.halt && executed < maxInstructions) {
      const pc = cpu.pc;
      if (executed > 0 && stopAtWords?.has(pc)) break;
      executed++;
      if (pc >= this.programEndWord) {
        this.halt = {
          reason: 'crashed',
          message: `PC ${hex(pc * 2)} left the loaded program (${hex(this.programEndWord * 2)} bytes): a jump into erased flash`,
        };
        break;
      }
      const opcode = progMem[pc]!;
      const interruptsOff = (cpu.data[0x5f]! & SREG_I) === 0;
      if (opcode === OP_BREAK || (interruptsOff && (opcode === OP_SLEEP || opcode === OP_RJMP_SELF))) {
        this.halt = { reason: 'exited', exitCode: cpu.data[24]! };
        break;
      }
      avrInstruction(cpu);
      cpu.tick();
      this.instructions++;
      if (opcode === OP_SLEEP) this.sleepUntilEvent(targetCycles);
    }
    return this.halt;
  }

  /**
   * After `sleep` with interrupts on: the core stays asleep while clock events (timer prescaler
   * ticks, UART characters) fire, until one of them leads to an interrupt being taken, or the
   * slice ends. avr8js timers schedule an event per prescaled tick, so this loops without
   * executing instructions.
   */
  private sleepUntilEvent(targetCycles: number) {
    const { cpu } = this;
    const wakePc = cpu.pc;
    for (;;) {
      if (cpu.pc !== wakePc || cpu.nextInterrupt >= 0) {
        this.sleeping = false;
        return;
      }
      const next = this.nextEventCycles();
      if (next === undefined || next > targetCycles) {
        // Asleep to the slice end. Execute the sleep again when we come back: it has no effect
        // but time, and by then a queued UART byte may have scheduled an event that wakes us.
        this.sleeping = next === undefined;
        this.sleptNanos += Math.max(0, targetCycles - cpu.cycles) * this.nanosPerCycle;
        cpu.cycles = Math.max(cpu.cycles, targetCycles);
        cpu.pc = (cpu.pc - 1 + this.progMem.length) % this.progMem.length;
        return;
      }
      if (next > cpu.cycles) {
        this.sleptNanos += (next - cpu.cycles) * this.nanosPerCycle;
        cpu.cycles = next;
      }
      // Fires the event and, if it raised an enabled interrupt, enters its handler (pc moves).
      cpu.tick();
    }
  }

  private nextEventCycles(): number | undefined {
    return nextClockEventCycles(this.cpu);
  }

  takeUartOutput(options: { partial: boolean }): EngineUartChunk | undefined {
    return this.tx.take(options);
  }

  openGdb(io: SimGdbIo): SimGdbTarget {
    return new AvrGdbTarget(this, io);
  }

  queueUartInput(bytes: Uint8Array): void {
    this.rxQueue.push(...bytes);
    this.scheduleRx();
  }

  private scheduleRx() {
    if (this.rxScheduled || this.rxQueue.length === 0) return;
    this.rxScheduled = true;
    this.sleeping = false;
    this.cpu.addClockEvent(() => {
      this.rxScheduled = false;
      this.deliverRxByte();
      this.scheduleRx();
    }, this.cyclesPerChar());
  }

  /** Character time from UBRR0, U2X0 and the frame format (datasheet §20.3.1). */
  private cyclesPerChar(): number {
    return usartCyclesPerChar(this.cpu.data, usart0Config);
  }

  private deliverRxByte() {
    const byte = this.rxQueue.shift();
    if (byte === undefined) return;
    const { data } = this.cpu;
    const enabled = (data[usart0Config.UCSRB]! & UCSRB_RXEN) !== 0;
    // avr8js keeps one received byte; a new one while RXC is still set would overwrite it silently.
    // Count it as the overrun (DOR) it is on the chip and keep the unread byte.
    if (!enabled || data[usart0Config.UCSRA]! & UCSRA_RXC) this.droppedRxBytes++;
    else this.usart.writeByte(byte, true);
  }
}
