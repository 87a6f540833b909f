/**
 * Runs a prebuilt sim-board ELF (pico on rp2040js, uno on avr8js) straight on the emulator
 * library, with no hilbench backend in between: the reference check that the committed
 * firmware and the conventions in docs/firmware.md work. ci/check-firmware.ts (npm run check:firmware) and
 * firmware/examples/firmware.test.ts use it; the sim backend implements the same conventions.
 *
 *   npx tsx firmware/examples/run-sim.ts <pico|uno> <file.elf> [simulatedSeconds]
 *
 * prints one JSON line: {"uart": "...", "stop": {...}, "simulatedNanos": n}.
 */
import { readFileSync } from 'node:fs';
import { AVRUSART, avrInstruction, CPU, usart0Config } from 'avr8js';
import { ConsoleLogger, LogLevel, Simulator } from 'rp2040js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { loadableSegments, parseElf } from '../../core/elf.js';
import { hasBoot2Stage } from '../../sim/rp2040/boot2.js';
import { Rp2040Engine } from '../../sim/rp2040-engine.js';
import { SimError } from '../../sim/sim-error.js';

export type SimStop =
  | { reason: 'elapsed' }
  | { reason: 'exited'; exitCode: number }
  | { reason: 'crashed'; message: string };

export interface SimRun {
  uart: string;
  stop: SimStop;
  simulatedNanos: number;
}

const RP2040_FLASH = 0x1000_0000;
const RP2040_FLASH_END = RP2040_FLASH + 0x20_0000;
const RP2040_SRAM = 0x2000_0000;
const RP2040_SRAM_END = RP2040_SRAM + 0x4_2000;
/** ARM semihosting: BKPT 0xAB, r0 = operation. SYS_EXIT 0x18, SYS_EXIT_EXTENDED 0x20. */
const SEMIHOSTING_BKPT = 0xab;
const ADP_STOPPED_APPLICATION_EXIT = 0x20026;

/**
 * Runs RP2040 firmware from flash without a bootrom: VTOR = 0x10000000, SP = word 0, PC = word 1.
 * Images with a boot2 stage call the boot ROM, which rp2040js does not have: they run on the
 * sim backend's engine with the project's own ROM instead (`runRp2040Boot2`).
 */
export function runRp2040(bytes: Uint8Array, options: { simulatedSeconds: number }): SimRun {
  const elf = parseElf(bytes);
  if (hasBoot2Stage(elf)) return runRp2040Boot2(bytes, options);
  const sim = new Simulator();
  const { rp2040: mcu, clock } = sim;
  mcu.logger = new ConsoleLogger(LogLevel.Error);
  for (const seg of loadableSegments(elf)) {
    const data = bytes.subarray(seg.offset, seg.offset + seg.fileSizeBytes);
    if (seg.paddr >= RP2040_FLASH && seg.paddr + data.length <= RP2040_FLASH_END) mcu.flash.set(data, seg.paddr - RP2040_FLASH);
    else if (seg.paddr >= RP2040_SRAM && seg.paddr + data.length <= RP2040_SRAM_END) mcu.sram.set(data, seg.paddr - RP2040_SRAM);
    else throw new Error(`segment at 0x${seg.paddr.toString(16)} is outside RP2040 flash and SRAM`);
  }
  const word = (address: number) => mcu.readUint32(address);
  mcu.core.VTOR = RP2040_FLASH;
  mcu.core.SP = word(RP2040_FLASH);
  mcu.core.PC = word(RP2040_FLASH + 4) & ~1;

  let uart = '';
  mcu.uart[0]!.onByte = (value: number) => {
    uart += String.fromCharCode(value);
  };
  let stop: SimStop | undefined;
  mcu.onBreak = (code: number) => {
    const pc = mcu.core.PC;
    const r0 = mcu.core.registers[0]!;
    const r1 = mcu.core.registers[1]!;
    // QEMU's reading (semihosting/arm-compat-semi.c): any reason but ApplicationExit exits with 1.
    if (code === SEMIHOSTING_BKPT && r0 === 0x20) stop = { reason: 'exited', exitCode: word(r1) === ADP_STOPPED_APPLICATION_EXIT ? word(r1 + 4) | 0 : 1 };
    else if (code === SEMIHOSTING_BKPT && r0 === 0x18) stop = { reason: 'exited', exitCode: r1 === ADP_STOPPED_APPLICATION_EXIT ? 0 : 1 };
    else stop = { reason: 'crashed', message: `breakpoint/undefined instruction #${code} at 0x${pc.toString(16)}` };
  };

  const limitNanos = options.simulatedSeconds * 1e9;
  const cycleNanos = 1e9 / 125_000_000; // rp2040js's Simulator also counts 125 MHz cycles
  while (stop === undefined && clock.nanos < limitNanos) {
    if (mcu.core.waiting) {
      const next = clock.nanosToNextAlarm;
      if (!Number.isFinite(next) || next <= 0) {
        stop = { reason: 'crashed', message: 'core waits for an interrupt that nothing will raise' };
        break;
      }
      clock.tick(next);
      continue;
    }
    clock.tick(mcu.core.executeInstruction() * cycleNanos);
    const pc = mcu.core.PC;
    // The convention for a crash: the core fetches from outside bootrom, flash and SRAM.
    if (!(pc < 0x4000 || (pc >= RP2040_FLASH && pc < RP2040_FLASH_END) || (pc >= RP2040_SRAM && pc < RP2040_SRAM_END))) {
      stop = { reason: 'crashed', message: `instruction fetch from 0x${pc.toString(16)}, outside bootrom, flash and SRAM` };
    }
  }
  return { uart, stop: stop ?? { reason: 'elapsed' }, simulatedNanos: clock.nanos };
}

/** Runs an RP2040 image with a boot2 stage on `Rp2040Engine` and its own boot ROM (docs/backends/sim.md). */
export function runRp2040Boot2(bytes: Uint8Array, options: { simulatedSeconds: number }): SimRun {
  const pico = loadBoardCatalog().find((b) => b.id === 'pico')!;
  const limitNanos = options.simulatedSeconds * 1e9;
  let uart = '';
  let stop: SimStop | undefined;
  try {
    const engine = new Rp2040Engine(pico, { bytes, elf: parseElf(bytes) }, { onUnmodelled: () => undefined });
    const collect = () => {
      for (let chunk = engine.takeUartOutput({ partial: true }); chunk; chunk = engine.takeUartOutput({ partial: true })) {
        uart += String.fromCharCode(...chunk.bytes);
      }
    };
    while (stop === undefined && engine.nanos < limitNanos) {
      stop = engine.advance(limitNanos);
      collect();
    }
    return { uart, stop: stop ?? { reason: 'elapsed' }, simulatedNanos: engine.nanos };
  } catch (err) {
    if (!(err instanceof SimError)) throw err;
    return { uart, stop: { reason: 'crashed', message: err.message }, simulatedNanos: 0 };
  }
}

const AVR_CLOCK_HZ = 16_000_000;
const AVR_FLASH_BYTES = 0x8000;
/** The hilbench AVR mailbox (docs/firmware.md): GPIOR1 argument, GPIOR2 command. */
const GPIOR1 = 0x4a;
const GPIOR2 = 0x4b;
const MAILBOX_EXIT = 0xe7;
const MAILBOX_CRASH = 0xc5;

/** Runs ATmega328P firmware: PT_LOAD segments by physical address into program memory. */
export function runAtmega328p(bytes: Uint8Array, options: { simulatedSeconds: number }): SimRun {
  const elf = parseElf(bytes);
  const progMem = new Uint16Array(AVR_FLASH_BYTES / 2);
  const progBytes = new Uint8Array(progMem.buffer);
  for (const seg of loadableSegments(elf)) {
    if (seg.paddr + seg.fileSizeBytes > AVR_FLASH_BYTES) throw new Error(`segment at 0x${seg.paddr.toString(16)} is outside the 32 KiB flash`);
    progBytes.set(bytes.subarray(seg.offset, seg.offset + seg.fileSizeBytes), seg.paddr);
  }
  const cpu = new CPU(progMem);
  const usart = new AVRUSART(cpu, usart0Config, AVR_CLOCK_HZ);
  let uart = '';
  usart.onByteTransmit = (value: number) => {
    uart += String.fromCharCode(value);
  };
  let stop: SimStop | undefined;
  cpu.writeHooks[GPIOR2] = (value: number) => {
    if (value === MAILBOX_EXIT) stop = { reason: 'exited', exitCode: cpu.data[GPIOR1]! };
    else if (value === MAILBOX_CRASH) stop = { reason: 'crashed', message: `firmware reported a crash (code ${cpu.data[GPIOR1]!})` };
    return false;
  };
  const limitCycles = options.simulatedSeconds * AVR_CLOCK_HZ;
  while (stop === undefined && cpu.cycles < limitCycles) {
    avrInstruction(cpu);
    cpu.tick();
    if (cpu.pc >= progMem.length) stop = { reason: 'crashed', message: `PC 0x${(cpu.pc * 2).toString(16)} left program memory` };
  }
  return { uart, stop: stop ?? { reason: 'elapsed' }, simulatedNanos: Math.round((cpu.cycles / AVR_CLOCK_HZ) * 1e9) };
}

/** Runs `bytes` on the simulator of `board` ('pico' or 'uno'). */
export function runSimBoard(board: string, bytes: Uint8Array, options: { simulatedSeconds: number }): SimRun {
  if (board === 'pico') return runRp2040(bytes, options);
  if (board === 'uno') return runAtmega328p(bytes, options);
  throw new Error(`no simulator for board "${board}" (known: pico, uno)`);
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/^.*\//, '/'))) {
  const [board, file, seconds] = process.argv.slice(2);
  if (!board || !file) {
    process.stderr.write('usage: run-sim.ts <pico|uno> <file.elf> [simulatedSeconds]\n');
    process.exit(2);
  }
  const run = runSimBoard(board, new Uint8Array(readFileSync(file)), { simulatedSeconds: Number(seconds ?? '1') });
  process.stdout.write(`${JSON.stringify(run)}\n`);
}
