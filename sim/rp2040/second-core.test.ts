import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { parseElf } from '../../core/elf.js';
import { THUMB_SLEEP_FOR_EVER, thumbProgram } from '../../test/support/sim-programs.js';
import { Rp2040Engine, type Rp2040EngineOptions } from '../rp2040-engine.js';
import { CORE_QUANTUM_CYCLES } from './core-turns.js';
import { FIFO_ST_VLD } from './inter-core-fifo.js';

const pico = loadBoardCatalog().find((b) => b.id === 'pico')!;
const strict: Rp2040EngineOptions = {
  onUnmodelled: (message) => {
    throw new Error(`unexpected unmodelled access: ${message}`);
  },
};
/** `b .` */
const THUMB_SPIN = 'fee7';
/** Where the tests put core 1's code: SRAM, out of the images' way. */
const CORE1_CODE = 0x20010000;
const CORE1_STACK = 0x20011000;
const PSM_FRCE_OFF_SET = 0x40012004;
const PSM_FRCE_OFF_CLEAR = 0x40013004;

/** Launches core 1 at `code` (Thumb halfwords in hex) the way core 0's firmware would, word by word through the FIFO. */
function launch(engine: Rp2040Engine, code: string, options: { thumb?: boolean } = {}) {
  engine.rp2040.sram.set(Uint8Array.from(code.match(/../g)!, (b) => parseInt(b, 16)), CORE1_CODE - 0x20000000);
  // The ROM's "here I am" 0 is waiting for core 0; the launch drains it first.
  engine.fifo.drain(0);
  for (const word of [0, 0, 1, 0x10000000, CORE1_STACK, CORE1_CODE | (options.thumb === false ? 0 : 1)]) {
    engine.fifo.write(0, word);
    engine.advance(engine.nanos + 10_000);
    expect(engine.fifo.read(0)).toBe(word);
  }
}

/** Runs a committed pico image until it halts (at most 200 ms simulated); its UART text, halt and engine. */
function runToHalt(program: string) {
  const bytes = new Uint8Array(readFileSync(fileURLToPath(new URL(`../../firmware/examples/pico/${program}.elf`, import.meta.url))));
  const engine = new Rp2040Engine(pico, { bytes, elf: parseElf(bytes) }, strict);
  let uart = '';
  let halt;
  while (!halt && engine.nanos < 200_000_000) {
    halt = engine.advance(200_000_000);
    for (let chunk = engine.takeUartOutput({ partial: true }); chunk; chunk = engine.takeUartOutput({ partial: true })) uart += new TextDecoder().decode(chunk.bytes);
  }
  return { uart, halt, engine };
}

describe('core 1 of the RP2040', () => {
  it('runs firmware/examples/pico/multicore.elf: launch, FIFO ping-pong and flags, spinlocks, an interrupt on core 1, a divider per core', () => {
    const { uart, halt, engine } = runToHalt('multicore');
    expect(uart).toBe(
      'hilbench multicore board=pico\r\nlaunch ok, fifo ping-pong 100\r\nspinlock counter 6000\r\nfifo flags ok\r\n' +
        'core 1 fifo interrupt sum 55\r\ndivider per core ok\r\nmulticore PASS\r\n',
    );
    expect(halt).toEqual({ reason: 'exited', exitCode: 0 });
    expect(engine.core1.state).toBe('running');
  });

  it('runs firmware/examples/pico/multicore-sdk.elf: the Pico SDK sequences (reset through the PSM, launch with a trampoline, blocking FIFO calls, FIFO interrupts, a mutex with WFE/SEV, lockout)', () => {
    const { uart, halt, engine } = runToHalt('multicore-sdk');
    expect(uart).toBe(
      'hilbench multicore-sdk board=pico\r\ncore 1 up, cpuid 1\r\nfifo irq on core 0: 12 words, sum 78\r\nmutex counter 800\r\n' +
        'lockout: core 1 held, then released\r\ncore 1 reset and relaunched\r\nmulticore-sdk PASS\r\n',
    );
    expect(halt).toEqual({ reason: 'exited', exitCode: 0 });
    // The second entry returned: core 1 is back in the ROM's holding pen.
    expect(engine.core1.state).toBe('pen');
  });

  it('waits in the boot ROM from reset, having told core 0 so with a 0, and costs no instructions there', () => {
    const engine = new Rp2040Engine(pico, thumbProgram(THUMB_SPIN), strict);
    expect(engine.core1.state).toBe('pen');
    expect(engine.fifo.status(0) & FIFO_ST_VLD).toBe(FIFO_ST_VLD);
    engine.advance(1_000_000);
    expect(engine.core1.state).toBe('pen');
    // `b .` is 2 cycles at 125 MHz: every instruction in the millisecond was core 0's.
    expect(engine.instructions).toBeCloseTo(1_000_000 / 16, -1);
  });

  it('starts from the vector table, stack and entry of the launch sequence, and a wrong word restarts it', () => {
    const engine = new Rp2040Engine(pico, thumbProgram(THUMB_SPIN), strict);
    engine.fifo.drain(0);
    engine.fifo.write(0, 0);
    engine.fifo.write(0, 7);
    engine.advance(10_000);
    expect([engine.fifo.read(0), engine.fifo.read(0)]).toEqual([0, 7]);
    launch(engine, THUMB_SPIN);
    expect(engine.core1.state).toBe('running');
    const core1 = engine.core1.core;
    expect([core1.VTOR, core1.SP, core1.PC]).toEqual([0x10000000, CORE1_STACK, CORE1_CODE]);
  });

  it('crashes the run when the entry lacks the Thumb bit, as the ROM branch there faults', () => {
    const engine = new Rp2040Engine(pico, thumbProgram(THUMB_SPIN), strict);
    launch(engine, THUMB_SPIN, { thumb: false });
    expect(engine.advance(engine.nanos + 1000)).toEqual({ reason: 'crashed', message: expect.stringMatching(/core 1.*without the Thumb bit/) });
  });

  it('keeps both cores within one quantum of each other while both run', () => {
    const engine = new Rp2040Engine(pico, thumbProgram(THUMB_SPIN), strict);
    launch(engine, THUMB_SPIN);
    const before = engine.instructions;
    engine.advance(engine.nanos + 1_000_000);
    const nanosPerCycle = 1e9 / engine.clockHz;
    expect(engine.nanos - engine.core1.nanos).toBeLessThanOrEqual(CORE_QUANTUM_CYCLES * nanosPerCycle);
    expect(engine.core1.nanos).toBeLessThanOrEqual(engine.nanos + 2 * nanosPerCycle);
    // Both spin at 2 cycles an instruction: twice the instructions of one core.
    expect(engine.instructions - before).toBeCloseTo(2 * (1_000_000 / 16), -2);
  });

  it('skips time when both cores sleep, and sleeps for ever when nothing can wake either', () => {
    const engine = new Rp2040Engine(pico, thumbProgram(THUMB_SLEEP_FOR_EVER), strict);
    // Core 1: `wfi; b .-2`.
    launch(engine, '30bffde7');
    engine.advance(engine.nanos + 1_000_000);
    expect(engine.asleepForever).toBe(true);
    const instructions = engine.instructions;
    engine.advance(1_000_000_000);
    expect(engine.nanos).toBe(1_000_000_000);
    expect(engine.instructions - instructions).toBeLessThan(10);
    expect(engine.sleptNanos).toBeGreaterThan(990_000_000);
  });

  it('goes back to the boot ROM when PSM FRCE_OFF.proc1 is set and cleared, and says so with a 0', () => {
    const engine = new Rp2040Engine(pico, thumbProgram(THUMB_SPIN), strict);
    launch(engine, THUMB_SPIN);
    engine.rp2040.writeUint32(PSM_FRCE_OFF_SET, 1 << 16);
    expect(engine.core1.state).toBe('off');
    engine.fifo.drain(0);
    engine.rp2040.writeUint32(PSM_FRCE_OFF_CLEAR, 1 << 16);
    expect(engine.core1.state).toBe('pen');
    expect(engine.fifo.read(0)).toBe(0);
    launch(engine, THUMB_SPIN);
    expect(engine.core1.state).toBe('running');
  });
});
