import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../boards/catalog.js';
import { EM_ARM, parseElf } from '../core/elf.js';
import { boot2Crc32 } from './rp2040/boot2.js';
import { Rp2040Engine, type Rp2040EngineOptions } from './rp2040-engine.js';
import { SimError } from './sim-error.js';
import {
  THUMB_BUS_ERROR,
  THUMB_HELLO_BKPT_5,
  THUMB_ROM_CALL,
  THUMB_SEMIHOSTING_EXIT_7,
  THUMB_SLEEP_FOR_EVER,
  THUMB_TIMER_ISR,
  THUMB_TIMER_WAKE,
  THUMB_UDF,
  elfImage,
  thumbProgram,
} from '../test/support/sim-programs.js';

const pico = loadBoardCatalog().find((b) => b.id === 'pico')!;
const strict: Rp2040EngineOptions = {
  onUnmodelled: (message) => {
    throw new Error(`unexpected unmodelled access: ${message}`);
  },
};
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** `ldr r1,=0xd0000054; movs r0,#0; str r0,[r1]; b .`: writes SIO FIFO_WR, as multicore_launch_core1 does. */
const THUMB_FIFO_WRITE = '014900200860fee7540000d0';
/** Looks 'UB' up through the ROM header (0x18 lookup, 0x14 table) and calls reset_to_usb_boot(0x20, ...). */
const THUMB_RESET_TO_USB_BOOT = '044b1b880448008804499847010020208847fee718000000140000005542000000';

/**
 * An image with a 256-byte boot2 stage (filler bytes, CRC32 in the last word) and, after it at
 * 0x10000100, a vector table (SP 0x20001000, reset at 0x10000108) and `code`.
 */
function boot2Program(code: string, options: { sections?: string[]; corruptCrc?: boolean } = {}) {
  const flash = new Uint8Array(0x200);
  flash.fill(0xa5, 0, 252);
  const v = new DataView(flash.buffer);
  v.setUint32(252, (boot2Crc32(flash.subarray(0, 252)) ^ (options.corruptCrc ? 1 : 0)) >>> 0, true);
  v.setUint32(0x100, 0x20001000, true);
  v.setUint32(0x104, 0x10000109, true);
  flash.set(Uint8Array.from(code.match(/../g)!, (b) => parseInt(b, 16)), 0x108);
  return elfImage(EM_ARM, [{ paddr: 0x10000000, data: flash }], options.sections ?? ['.boot2']);
}

/** A fake 16 KiB boot ROM: a vector table (SP in SRAM, Thumb reset handler) and `b .` at 0x100. */
function fakeBootrom(): Uint32Array {
  const rom = new Uint32Array(0x1000);
  rom[0] = 0x20041f00;
  rom[1] = 0x101;
  rom[0x40] = 0xe7fe;
  return rom;
}

describe('Rp2040Engine', () => {
  it('boots from the vector table at 0x10000000, captures UART0 with simulated timestamps; bkpt without a debugger is a crash', () => {
    const engine = new Rp2040Engine(pico, thumbProgram(THUMB_HELLO_BKPT_5), strict);
    expect(engine.rp2040.core.VTOR).toBe(0x10000000);
    expect(engine.rp2040.core.SP).toBe(0x20001000);
    expect(engine.rp2040.core.PC).toBe(0x10000008);
    // The line feed closes a chunk: the engine returns so the run loop can hand it out.
    expect(engine.advance(1_000_000)).toBeUndefined();
    const chunk = engine.takeUartOutput({ partial: false })!;
    expect(text(chunk.bytes)).toBe('hi\n');
    expect(engine.advance(1_000_000)).toEqual({ reason: 'crashed', message: expect.stringMatching(/HardFault: bkpt #5 with no debugger/) });
    // ldr (2 cycles) + movs (1): the first store happens 3 cycles of 8 ns after release.
    expect(chunk.atNanos).toBe(24);
    expect(engine.instructions).toBe(8);
  });

  it('places segments by physical address and refuses an image outside flash and SRAM without loading it', () => {
    const image = thumbProgram(THUMB_HELLO_BKPT_5);
    const engine = new Rp2040Engine(pico, image, strict);
    expect(engine.placed).toEqual([{ target: 'flash', paddr: 0x10000000, sizeBytes: 0x100 }]);
    expect(engine.rp2040.flash[0x100]).toBe(0xff);

    const outside = { ...image, elf: { ...image.elf, segments: image.elf.segments.map((s) => ({ ...s, paddr: 0x08000000 })) } };
    const error = (() => {
      try {
        new Rp2040Engine(pico, outside, strict);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(SimError);
    expect((error as SimError).kind).toBe('bad-image');
    expect((error as SimError).message).toMatch(/0x08000000.*outside.*flash 0x10000000/);
  });

  it('refuses an image without a vector table, naming what it expected', () => {
    const noVectors = thumbProgram(THUMB_HELLO_BKPT_5);
    noVectors.bytes.fill(0, noVectors.elf.segments[0]!.offset, noVectors.elf.segments[0]!.offset + 8);
    expect(() => new Rp2040Engine(pico, noVectors, strict)).toThrow(/vector table at 0x10000000/);
  });

  it('skips simulated time while the core sleeps in WFI with nothing scheduled, and says so', () => {
    const engine = new Rp2040Engine(pico, thumbProgram(THUMB_SLEEP_FOR_EVER), strict);
    expect(engine.advance(10_000_000_000)).toBeUndefined();
    expect(engine.nanos).toBe(10_000_000_000);
    expect(engine.instructions).toBeLessThan(5);
    expect(engine.sleptNanos).toBeGreaterThan(9_999_999_000);
    expect(engine.asleepForever).toBe(true);
  });

  it('wakes from WFI at the next timer alarm: the interrupt runs 1 ms in, without spinning in between', () => {
    const engine = new Rp2040Engine(pico, thumbProgram(THUMB_TIMER_WAKE, [{ vector: 16, offset: 0x48, code: THUMB_TIMER_ISR }]), strict);
    expect(engine.advance(5_000_000)).toBeUndefined();
    const chunk = engine.takeUartOutput({ partial: true })!;
    expect(text(chunk.bytes)).toBe('T');
    // rp2040js arms the alarm relative to the fractional microsecond it was written in.
    expect(chunk.atNanos).toBeGreaterThanOrEqual(999_000);
    expect(chunk.atNanos).toBeLessThan(1_010_000);
    expect(engine.instructions).toBeLessThan(60);
    // An ISR that printed is a chunk ready to hand out: the engine returned there, so run on.
    expect(engine.advance(5_000_000)).toBeUndefined();
    expect(engine.nanos).toBe(5_000_000);
    expect(engine.asleepForever).toBe(true);
  });

  it('reports semihosting SYS_EXIT_EXTENDED as an exit with its status', () => {
    const engine = new Rp2040Engine(pico, thumbProgram(THUMB_SEMIHOSTING_EXIT_7), strict);
    expect(engine.advance(1_000_000)).toEqual({ reason: 'exited', exitCode: 7 });
  });

  it('reports an undefined instruction and a bus error as crashes (HardFault on the chip)', () => {
    const udf = new Rp2040Engine(pico, thumbProgram(THUMB_UDF), strict).advance(1_000_000);
    expect(udf).toMatchObject({ reason: 'crashed', message: expect.stringMatching(/HardFault: undefined instruction \(udf #1\)/) });
    const bus = new Rp2040Engine(pico, thumbProgram(THUMB_BUS_ERROR), strict).advance(1_000_000);
    expect(bus).toMatchObject({ reason: 'crashed', message: expect.stringMatching(/HardFault: bus error near PC 0x1000000c: access to unmapped address 0x30000000/) });
  });

  it('stops with a clear error when execution reaches a ROM address that is no function entry of the own ROM', () => {
    const engine = new Rp2040Engine(pico, thumbProgram(THUMB_ROM_CALL), strict);
    expect(() => engine.advance(1_000_000)).toThrow(SimError);
    expect(() => new Rp2040Engine(pico, thumbProgram(THUMB_ROM_CALL), strict).advance(1_000_000)).toThrow(
      /reached 0x00000010 in the boot ROM, which is not the entry of a function.*HILBENCH_RP2040_BOOTROM/,
    );
  });

  it('starts a boot2 image without a ROM file as boot2 leaves the core: VTOR 0x10000100, SP and PC from there', () => {
    const engine = new Rp2040Engine(pico, boot2Program(THUMB_SLEEP_FOR_EVER), strict);
    expect(engine.rp2040.core.VTOR).toBe(0x10000100);
    expect(engine.rp2040.core.SP).toBe(0x20001000);
    expect(engine.rp2040.core.PC).toBe(0x10000108);
    // Without a .boot2 section the valid CRC alone marks the stage.
    expect(new Rp2040Engine(pico, boot2Program(THUMB_SLEEP_FOR_EVER, { sections: [] }), strict).rp2040.core.VTOR).toBe(0x10000100);
  });

  it('refuses a boot2 stage whose CRC32 is wrong, naming both values', () => {
    const bad = boot2Program(THUMB_SLEEP_FOR_EVER, { corruptCrc: true });
    expect(() => new Rp2040Engine(pico, bad, strict)).toThrow(
      /boot2 stage .* fails the boot ROM's CRC32 check: bytes 252\.\.255 hold 0x[0-9a-f]{8} but the CRC of bytes 0\.\.251 is 0x[0-9a-f]{8}/,
    );
  });

  it("with a configured B1 ROM, starts a boot2 image in boot2 at 0x10000000 with the ROM's SP", () => {
    const engine = new Rp2040Engine(pico, thumbProgram(THUMB_SLEEP_FOR_EVER, [], ['.boot2']), { ...strict, bootrom: fakeBootrom() });
    expect(engine.rp2040.core.PC).toBe(0x10000000);
    expect(engine.rp2040.core.SP).toBe(0x20041f00);
    // The image is loaded after the bootrom erased flash.
    expect(engine.rp2040.flashView.getUint32(0, true)).toBe(0x20001000);
  });

  it('runs firmware/examples/pico/rom-test.elf: every ROM function looked up by code and checked on the device passes', () => {
    const bytes = new Uint8Array(readFileSync(fileURLToPath(new URL('../firmware/examples/pico/rom-test.elf', import.meta.url))));
    const engine = new Rp2040Engine(pico, { bytes, elf: parseElf(bytes) }, strict);
    let uart = '';
    let halt;
    while (!halt && engine.nanos < 100_000_000) {
      halt = engine.advance(100_000_000);
      for (let chunk = engine.takeUartOutput({ partial: true }); chunk; chunk = engine.takeUartOutput({ partial: true })) uart += text(chunk.bytes);
    }
    expect(uart).toMatch(/^hilbench rom-test board=pico rom=v3\r\nrom-test PASS \d+ checks\r\n$/);
    expect(halt).toEqual({ reason: 'exited', exitCode: 0 });
  });

  it("delivers a word core 0 writes to the inter-core FIFO to core 1's boot ROM, which echoes it (sim/rp2040/second-core.test.ts has the rest)", () => {
    const engine = new Rp2040Engine(pico, boot2Program(THUMB_FIFO_WRITE), strict);
    engine.fifo.drain(0);
    expect(engine.advance(1_000_000)).toBeUndefined();
    expect(engine.fifo.read(0)).toBe(0);
    expect(engine.core1.state).toBe('pen');
  });

  it('refuses the USB controller with a clear error when the firmware enables it (no USB host is attached)', () => {
    // `ldr r1,=0x50110040; movs r0,#1; str r0,[r1]; b .`: MAIN_CTRL.CONTROLLER_EN.
    const engine = new Rp2040Engine(pico, thumbProgram('014901200860fee740001150'), strict);
    expect(() => engine.advance(1_000_000)).toThrow(/the USB controller is not modelled: the firmware enabled it/);
  });

  it('halts with a clear message when firmware calls reset_to_usb_boot', () => {
    const engine = new Rp2040Engine(pico, boot2Program(THUMB_RESET_TO_USB_BOOT), strict);
    expect(engine.advance(1_000_000)).toEqual({
      reason: 'crashed',
      message: expect.stringMatching(/reset_to_usb_boot \(gpio_activity_pin_mask 0x20.*USB BOOTSEL mode/),
    });
  });

  it('feeds written bytes to the receive FIFO one character time apart and counts the overrun', () => {
    const engine = new Rp2040Engine(pico, thumbProgram(THUMB_SLEEP_FOR_EVER), strict);
    engine.queueUartInput(new Uint8Array(40).fill(0x41));
    expect(engine.asleepForever).toBe(false);
    engine.advance(1_000_000);
    // 10 bits at 115200 baud = 86.8 µs per byte: 11 bytes by 1 ms, none lost yet.
    expect(engine.pendingRxBytes).toBe(40 - 11);
    expect(engine.droppedRxBytes).toBe(0);
    engine.advance(10_000_000);
    // The firmware never reads: the 32-byte FIFO fills and the other 8 bytes are lost, and counted.
    expect(engine.pendingRxBytes).toBe(0);
    expect(engine.droppedRxBytes).toBe(8);
  });
});
