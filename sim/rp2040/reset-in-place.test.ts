import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { loadableSegments, parseElf } from '../../core/elf.js';
import { chipState } from '../../test/support/chip-state.js';
import { Rp2040Engine, type Rp2040EngineOptions } from '../rp2040-engine.js';
import type { SimImage } from '../sim-engine.js';
import { OwnBootrom } from './own-bootrom.js';

const pico = loadBoardCatalog().find((b) => b.id === 'pico')!;
const strict: Rp2040EngineOptions = {
  onUnmodelled: (message) => {
    throw new Error(`unexpected unmodelled access: ${message}`);
  },
};
const image = (program: string): SimImage => {
  const bytes = new Uint8Array(readFileSync(fileURLToPath(new URL(`../../firmware/examples/pico/${program}.elf`, import.meta.url))));
  return { bytes, elf: parseElf(bytes) };
};
/** A copy of `program` with the word at flash address `at` (in a loaded segment's file bytes) set to `value`. */
const withFlashWord = (program: string, at: number, value: number): SimImage => {
  const bytes = image(program).bytes.slice();
  const elf = parseElf(bytes);
  const segment = loadableSegments(elf).find((s) => at >= s.paddr && at + 4 <= s.paddr + s.fileSizeBytes)!;
  new DataView(bytes.buffer).setUint32(segment.offset + (at - segment.paddr), value, true);
  return { bytes, elf };
};
/** `program` with its segments moved to the peripherals' addresses, where no image can be loaded. */
const outsideMemory = (program: string): SimImage => {
  const { bytes, elf } = image(program);
  return { bytes, elf: { ...elf, segments: elf.segments.map((s) => ({ ...s, paddr: 0x4000_0000 + (s.paddr & 0xffff) })) } };
};
const TIMER_ALARM0 = 0x40054010;
const TIMER_INTE = 0x40054038;
const PIO0_CTRL = 0x50200000;
const PIO0_INSTR_MEM0 = 0x50200048;
const DMA_CH0_READ_ADDR = 0x50000000;
const UART0_IBRD = 0x40034024;

/** Runs the engine until it halts (at most 200 ms simulated); its UART text and halt. */
function runToHalt(engine: Rp2040Engine) {
  let uart = '';
  let halt;
  while (!halt && engine.nanos < 200_000_000) {
    halt = engine.advance(200_000_000);
    for (let chunk = engine.takeUartOutput({ partial: true }); chunk; chunk = engine.takeUartOutput({ partial: true })) uart += new TextDecoder().decode(chunk.bytes);
  }
  return { uart, halt };
}

/** `chipState` of an RP2040 engine: the inputs given and the shared own ROM are not its state. */
const rp2040State = (engine: Rp2040Engine, inputs: readonly object[]) => chipState(engine, (value) => inputs.includes(value) || value instanceof OwnBootrom);

afterEach(() => {
  vi.useRealTimers();
});

describe('a reset of the RP2040 engine', () => {
  it('after a job that used both cores and dirtied SRAM, flash and peripherals, gives the chip as built, on the same memories', () => {
    const program = image('multicore');
    const fresh = new Rp2040Engine(pico, program, strict);
    const used = new Rp2040Engine(pico, program, strict);
    const inputs = [pico, program, strict];
    const asBuilt = rp2040State(fresh, inputs);
    expect(rp2040State(used, inputs)).toEqual(asBuilt);

    const first = runToHalt(used);
    expect(first.halt).toEqual({ reason: 'exited', exitCode: 0 });
    // Past the exit: what a job leaves behind besides what the firmware did (core 1 launched, FIFOs, spinlocks, divider, UART, clocks).
    const chip = used.rp2040;
    chip.flash.fill(0, 0x100000, 0x101000);
    chip.sram.fill(0xa5);
    chip.writeUint32(TIMER_INTE, 1);
    chip.writeUint32(TIMER_ALARM0, 0x1000_0000);
    chip.writeUint32(PIO0_INSTR_MEM0, 0xe001);
    chip.writeUint32(DMA_CH0_READ_ADDR, 0x2000_0000);
    chip.writeUint32(UART0_IBRD, 3);
    used.queueUartInput(new Uint8Array([1, 2, 3]));
    const dirty = rp2040State(used, inputs);
    expect(Object.keys(dirty).filter((path) => dirty[path] !== asBuilt[path]).length).toBeGreaterThan(50);
    const memories = { flash: chip.flash, sram: chip.sram, core: chip.core };

    used.reset();

    expect(rp2040State(used, inputs)).toEqual(asBuilt);
    // The same objects, not equal copies: nothing of the chip was allocated anew.
    expect(used.rp2040.flash === memories.flash && used.rp2040.sram === memories.sram && used.rp2040.core === memories.core).toBe(true);
    expect(runToHalt(used)).toEqual(first);
  });

  it('stops a PIO block the job left running on its host timer, so it never runs beside the next job\'s', () => {
    // rp2040js steps an enabled PIO block from a host setTimeout of its own (not the engine's clock).
    vi.useFakeTimers();
    const engine = new Rp2040Engine(pico, image('multicore'), strict);
    engine.rp2040.writeUint32(PIO0_CTRL, 1);
    expect(vi.getTimerCount(), "the job's PIO run pending").toBe(1);
    engine.reset();
    // The next job enables PIO before the old timer fired: one run, not two side by side.
    engine.rp2040.writeUint32(PIO0_CTRL, 1);
    expect(vi.getTimerCount()).toBe(1);
  });

  it('loads the image again, so flash the firmware erased or programmed is back', () => {
    const program = image('hello');
    const engine = new Rp2040Engine(pico, program, strict);
    const firstRun = runToHalt(engine);
    engine.rp2040.flash.fill(0xff, 0, 0x1000);
    engine.reset();
    expect(runToHalt(engine)).toEqual(firstRun);
  });
});

describe('a reflash of the RP2040 engine', () => {
  it('puts another image on the same chip, as a new engine with it would be, and a reset afterwards keeps that image', () => {
    const first = image('multicore');
    const second = image('rom-test');
    const inputs = [pico, first, second, strict];
    const fresh = new Rp2040Engine(pico, second, strict);
    const asBuilt = rp2040State(fresh, inputs);
    const expected = runToHalt(fresh);
    expect(expected.halt).toEqual({ reason: 'exited', exitCode: 0 });

    const used = new Rp2040Engine(pico, first, strict);
    expect(runToHalt(used).halt).toEqual({ reason: 'exited', exitCode: 0 });
    used.rp2040.sram.fill(0xa5);
    used.rp2040.writeUint32(TIMER_INTE, 1);
    used.rp2040.writeUint32(TIMER_ALARM0, 0x1000_0000);
    const memories = { flash: used.rp2040.flash, sram: used.rp2040.sram, core: used.rp2040.core };

    used.reflash(second);

    expect(rp2040State(used, inputs)).toEqual(asBuilt);
    expect(used.rp2040.flash === memories.flash && used.rp2040.sram === memories.sram && used.rp2040.core === memories.core).toBe(true);
    expect(runToHalt(used)).toEqual(expected);
    // The snapshot of the chip as built holds the first image; a reset must load the one flashed since.
    used.reset();
    expect(runToHalt(used)).toEqual(expected);
  });

  it.each([
    ['a boot2 stage whose CRC is wrong', () => withFlashWord('rom-test', 0x1000_0000, 0), /boot2 stage .* CRC32/],
    ['no vector table', () => withFlashWord('hello', 0x1000_0004, 0), /vector table/],
    ['its segments outside the memories', () => outsideMemory('hello'), /lies outside the memory/],
  ])('refuses an image with %s and leaves the chip as it was, mid-run, image included', (_what, refused, message) => {
    const program = image('multicore');
    const bad = refused();
    const inputs = [pico, program, bad, strict];
    const used = new Rp2040Engine(pico, program, strict);
    const twin = new Rp2040Engine(pico, program, strict);
    // Both halfway through the same job: core 1 launched, output on its way.
    for (const engine of [used, twin]) engine.advance(2_000_000);
    const midRun = rp2040State(twin, inputs);
    expect(rp2040State(used, inputs)).toEqual(midRun);

    expect(() => used.reflash(bad)).toThrow(message);

    expect(rp2040State(used, inputs)).toEqual(midRun);
    expect(runToHalt(used)).toEqual(runToHalt(twin));
  });
});
