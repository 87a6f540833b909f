import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { parseElf } from '../../core/elf.js';
import type { SimEngine, SimImage } from '../../sim/sim-engine.js';
import { SimChip } from './sim-chip.js';
import { simEngineFactory } from './sim-engines.js';

const boards = loadBoardCatalog();
const image = (board: string, program: string): SimImage => {
  const bytes = new Uint8Array(readFileSync(new URL(`../../firmware/examples/${board}/${program}.elf`, import.meta.url)));
  return { bytes, elf: parseElf(bytes) };
};
const refused = (board: string): SimImage => {
  // The hello image with its segments at the peripherals' addresses: no chip loads it.
  const { bytes, elf } = image(board, 'hello');
  return { bytes, elf: { ...elf, segments: elf.segments.map((s) => ({ ...s, paddr: 0x4000_0000 + (s.paddr & 0xffff) })) } };
};

/** A chip of `board` whose engines are counted as they are built. */
function countedChip(board: string) {
  const build = simEngineFactory(boards.find((b) => b.id === board)!, { onUnmodelled: () => {} });
  const built: SimEngine[] = [];
  const chip = new SimChip((img) => {
    const engine = build(img);
    built.push(engine);
    return engine;
  });
  return { chip, built };
}

async function runToEnd(chip: SimChip) {
  let uart = '';
  const stop = await chip.run({ endNanos: 200_000_000, onUart: (c) => (uart += new TextDecoder().decode(c.bytes)), yieldToHost: async () => {} });
  return { stop, uart };
}

describe('SimChip on the RP2040', () => {
  it('flashes another image onto the same engine (no 16 MiB chip built per job) and keeps counting across it', async () => {
    const { chip, built } = countedChip('pico');
    chip.flash(image('pico', 'hello'));
    const first = await runToEnd(chip);
    const spent = chip.counters.instructions;
    expect(spent).toBeGreaterThan(0);

    chip.flash(image('pico', 'rom-test'));
    expect(built.length).toBe(1);
    expect(chip.counters.instructions).toBe(spent);
    const second = await runToEnd(chip);
    expect(second.stop).toMatchObject({ reason: 'exited', exitCode: 0 });
    expect(second.uart).not.toEqual(first.uart);
    chip.reset();
    expect(await runToEnd(chip)).toEqual(second);
  });

  it('keeps the old chip, its image and its counters when a flash is refused', async () => {
    const { chip, built } = countedChip('pico');
    chip.flash(image('pico', 'hello'));
    const first = await runToEnd(chip);
    const counters = chip.counters;

    expect(() => chip.flash(refused('pico'))).toThrow(/lies outside the memory/);

    expect(built.length).toBe(1);
    expect(chip.counters).toEqual(counters);
    chip.reset();
    expect(await runToEnd(chip)).toEqual(first);
  });
});

describe('SimChip on the ATmega328P', () => {
  it('resets in place: the same engine, the job again alike', async () => {
    const { chip, built } = countedChip('uno');
    chip.flash(image('uno', 'exit'));
    const first = await runToEnd(chip);
    expect(first.uart).toContain('hilbench exit board=uno');

    chip.reset();

    expect(built.length).toBe(1);
    expect(await runToEnd(chip)).toEqual(first);
  });
});
