import { describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../boards/catalog.js';
import { AvrEngine } from './avr-engine.js';
import { SimError } from './sim-error.js';
import {
  AVR_CLI_SLEEP_9,
  AVR_EXIT_LOOP_4,
  AVR_HELLO_BREAK_3,
  AVR_MAILBOX_CRASH,
  AVR_MAILBOX_EXIT_5,
  AVR_RX_NEVER_READ,
  AVR_SLEEP_TIMER,
  AVR_WRITE_ACSR,
  AVR_WILD_JUMP,
  avrProgram,
  elfImage,
} from '../test/support/sim-programs.js';
import { EM_AVR } from '../core/elf.js';

const uno = loadBoardCatalog().find((b) => b.id === 'uno')!;
const strict = {
  onUnmodelled: (message: string) => {
    throw new Error(`unexpected unmodelled access: ${message}`);
  },
};
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
/** 115200 baud at 16 MHz with UBRR = 8: 9 * 16 cycles per bit, 10 bits, 62.5 ns per cycle. */
const CHAR_NANOS = 9 * 16 * 10 * 62.5;

function runToHalt(engine: AvrEngine, endNanos: number) {
  let output = '';
  for (;;) {
    const halt = engine.advance(endNanos);
    for (let c = engine.takeUartOutput({ partial: true }); c; c = engine.takeUartOutput({ partial: true })) output += text(c.bytes);
    if (halt || engine.nanos >= endNanos) return { halt, output };
  }
}

describe('AvrEngine', () => {
  it('starts at the reset vector, sends UART bytes at the baud rate and exits on break with r24', () => {
    const engine = new AvrEngine(uno, avrProgram(AVR_HELLO_BREAK_3), strict);
    expect(engine.cpu.pc).toBe(0);
    expect(engine.advance(10_000_000)).toBeUndefined();
    const chunk = engine.takeUartOutput({ partial: false })!;
    expect(text(chunk.bytes)).toBe('hi\n');
    // The first byte is written 14 cycles in; the next wait for UDRE0, one character time each.
    expect(chunk.atNanos).toBe(14 * 62.5);
    expect(engine.advance(10_000_000)).toEqual({ reason: 'exited', exitCode: 3 });
    // The firmware waited for TXC0 after the third byte: three character times in all.
    expect(engine.nanos).toBeGreaterThanOrEqual(3 * CHAR_NANOS);
    expect(engine.nanos).toBeLessThan(3 * CHAR_NANOS + 5_000);
  });

  it('places .data initialisers by load address and refuses bytes outside flash', () => {
    const image = elfImage(EM_AVR, [
      { paddr: 0, data: Uint8Array.from([0x89, 0xe0, 0xf8, 0x94, 0x88, 0x95]) },
      { paddr: 6, data: Uint8Array.from([0xaa, 0xbb]) },
    ]);
    const engine = new AvrEngine(uno, image, strict);
    expect(engine.placed.map((p) => p.target)).toEqual(['flash', 'flash']);
    expect(engine.cpu.progBytes[6]).toBe(0xaa);
    expect(engine.cpu.progBytes[8]).toBe(0xff);

    const tooBig = elfImage(EM_AVR, [{ paddr: 0x7ffe, data: new Uint8Array(4) }]);
    expect(() => new AvrEngine(uno, tooBig, strict)).toThrow(SimError);
    expect(() => new AvrEngine(uno, tooBig, strict)).toThrow(/0x00007ffe.*outside.*flash 0x00000000\.\.0x00008000/);
  });

  it('follows the GPIOR mailbox: 0xe7 exits with GPIOR1, 0xc5 reports a crash', () => {
    expect(new AvrEngine(uno, avrProgram(AVR_MAILBOX_EXIT_5), strict).advance(1_000_000)).toEqual({ reason: 'exited', exitCode: 5 });
    expect(new AvrEngine(uno, avrProgram(AVR_MAILBOX_CRASH), strict).advance(1_000_000)).toEqual({
      reason: 'crashed',
      message: expect.stringMatching(/crash through the GPIOR mailbox/),
    });
  });

  it('treats sleep with interrupts off and avr-libc _exit (cli; rjmp .) as exits with r24', () => {
    expect(new AvrEngine(uno, avrProgram(AVR_CLI_SLEEP_9), strict).advance(1_000_000)).toEqual({ reason: 'exited', exitCode: 9 });
    expect(new AvrEngine(uno, avrProgram(AVR_EXIT_LOOP_4), strict).advance(1_000_000)).toEqual({ reason: 'exited', exitCode: 4 });
  });

  it('reports a jump into erased flash as a crash', () => {
    expect(new AvrEngine(uno, avrProgram(AVR_WILD_JUMP), strict).advance(1_000_000)).toEqual({
      reason: 'crashed',
      message: expect.stringMatching(/PC 0x1000 left the loaded program/),
    });
  });

  it('sleeps to the next timer event instead of spinning, and wakes for the interrupt', () => {
    const engine = new AvrEngine(uno, avrProgram(AVR_SLEEP_TIMER), strict);
    const { halt } = runToHalt(engine, 1_000_000_000);
    // Three timer0 overflows at clk/1024: 3 * 256 * 1024 cycles of 62.5 ns = 49.152 ms.
    expect(halt).toEqual({ reason: 'exited', exitCode: 0 });
    expect(engine.nanos).toBeGreaterThanOrEqual(49_152_000);
    expect(engine.nanos).toBeLessThan(49_200_000);
    expect(engine.instructions).toBeLessThan(40);
    expect(engine.sleptNanos).toBeGreaterThan(49_000_000);
  });

  it('delivers written bytes one character time apart and counts those the firmware never read', () => {
    const engine = new AvrEngine(uno, avrProgram(AVR_RX_NEVER_READ), strict);
    engine.advance(10_000);
    engine.queueUartInput(new TextEncoder().encode('hello'));
    engine.advance(2 * CHAR_NANOS);
    expect(engine.pendingRxBytes).toBe(4);
    engine.advance(10_000_000);
    // One byte waits in UDR0 (RXC set); the four after it overrun, and are counted.
    expect(engine.pendingRxBytes).toBe(0);
    expect(engine.droppedRxBytes).toBe(4);
  });

  it('reports accesses to I/O registers avr8js does not model, and stays quiet about those it does', () => {
    const reports: Array<[string, number]> = [];
    const engine = new AvrEngine(uno, avrProgram(AVR_WRITE_ACSR), { onUnmodelled: (m, n) => reports.push([m, n]) });
    engine.advance(10_000);
    expect(reports).toEqual([[expect.stringMatching(/write to ACSR \(0x0050\), which avr8js does not model \(value 0x80\)/), 1]]);
    expect(engine.unmodelledAccesses.size).toBe(1);
  });
});
