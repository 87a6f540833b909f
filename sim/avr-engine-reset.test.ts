import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../boards/catalog.js';
import { parseElf } from '../core/elf.js';
import { chipState } from '../test/support/chip-state.js';
import { AvrEngine } from './avr-engine.js';
import type { SimImage } from './sim-engine.js';

const uno = loadBoardCatalog().find((b) => b.id === 'uno')!;
const strict = {
  onUnmodelled: (message: string) => {
    throw new Error(`unexpected unmodelled access: ${message}`);
  },
};
const image = (program: string): SimImage => {
  const bytes = new Uint8Array(readFileSync(new URL(`../firmware/examples/uno/${program}.elf`, import.meta.url)));
  return { bytes, elf: parseElf(bytes) };
};
/** ATmega328P data addresses (datasheet §36): SRAM from 0x100, TCNT1L, and EEPROM's EEDR/EEAR. */
const SRAM_START = 0x100;
const TCNT1L = 0x84;

/** Runs until the engine halts or 50 ms simulated have passed; its UART text, halt and time. */
function runFor50Ms(engine: AvrEngine) {
  let uart = '';
  let halt;
  while (!halt && engine.nanos < 50_000_000) {
    halt = engine.advance(50_000_000);
    for (let chunk = engine.takeUartOutput({ partial: true }); chunk; chunk = engine.takeUartOutput({ partial: true })) uart += new TextDecoder().decode(chunk.bytes);
  }
  return { uart, halt, nanos: engine.nanos, instructions: engine.instructions };
}

describe('a reset of the ATmega328P engine', () => {
  it('after a job, gives the chip as built on the same avr8js objects, and runs the job again alike', () => {
    for (const program of ['hello', 'exit']) {
      const firmware = image(program);
      const inputs: readonly object[] = [uno, firmware, strict];
      const state = (engine: AvrEngine) => chipState(engine, (value) => inputs.includes(value));
      const fresh = new AvrEngine(uno, firmware, strict);
      const used = new AvrEngine(uno, firmware, strict);
      const asBuilt = state(fresh);
      expect(state(used)).toEqual(asBuilt);

      const first = runFor50Ms(used);
      expect(first.uart).toContain(`hilbench ${program} board=uno`);
      // What a job leaves behind besides what the firmware did: SRAM, a timer, bytes on their way in, an armed clock event.
      used.cpu.data.fill(0xa5, SRAM_START, SRAM_START + 64);
      used.cpu.writeData(TCNT1L, 0x12);
      used.queueUartInput(new Uint8Array([1, 2, 3]));
      const dirty = state(used);
      expect(Object.keys(dirty).filter((path) => dirty[path] !== asBuilt[path]).length).toBeGreaterThan(20);
      const objects = { cpu: used.cpu, data: used.cpu.data, progMem: used.cpu.progMem, usart: used.usart, pins: used.pins };

      used.reset();

      expect(state(used)).toEqual(asBuilt);
      // The same objects, not equal copies: nothing of the chip was built anew.
      const same = { cpu: used.cpu, data: used.cpu.data, progMem: used.cpu.progMem, usart: used.usart, pins: used.pins };
      expect(Object.entries(same).filter(([key, value]) => objects[key as keyof typeof objects] !== value)).toEqual([]);
      expect(runFor50Ms(used)).toEqual(first);
    }
  });
});
