import { describe, expect, it } from 'vitest';
import { FIFO_DEPTH, FIFO_ST_RDY, FIFO_ST_ROE, FIFO_ST_VLD, FIFO_ST_WOF, InterCoreFifo } from './inter-core-fifo.js';

describe('InterCoreFifo', () => {
  it('carries words from one core to the other in order, eight deep, and loses a ninth with WOF set on the writer', () => {
    const changed: number[] = [];
    const fifo = new InterCoreFifo((side) => changed.push(side));
    expect(fifo.status(0)).toBe(FIFO_ST_RDY);
    for (let i = 1; i <= FIFO_DEPTH; i++) fifo.write(0, i);
    expect(fifo.status(0) & FIFO_ST_RDY).toBe(0);
    expect(fifo.status(1)).toBe(FIFO_ST_VLD | FIFO_ST_RDY);
    fifo.write(0, 99);
    expect(fifo.status(0) & FIFO_ST_WOF).toBe(FIFO_ST_WOF);
    expect(fifo.irqLevel(0)).toBe(true);
    expect(Array.from({ length: FIFO_DEPTH }, () => fifo.read(1))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(fifo.status(1) & FIFO_ST_VLD).toBe(0);
    expect(changed).toContain(1);
  });

  it('reads 0 from an empty FIFO and sets ROE; writing 1s to FIFO_ST clears the sticky flags and the IRQ line', () => {
    const fifo = new InterCoreFifo(() => undefined);
    expect(fifo.read(1)).toBe(0);
    expect(fifo.status(1) & FIFO_ST_ROE).toBe(FIFO_ST_ROE);
    expect(fifo.irqLevel(1)).toBe(true);
    fifo.clearSticky(1, FIFO_ST_VLD);
    expect(fifo.status(1) & FIFO_ST_ROE).toBe(FIFO_ST_ROE);
    fifo.clearSticky(1, FIFO_ST_ROE | FIFO_ST_WOF);
    expect(fifo.status(1)).toBe(FIFO_ST_RDY);
    expect(fifo.irqLevel(1)).toBe(false);
  });

  it("raises a core's IRQ line while it has a word to read, and drops it when the word is read", () => {
    const fifo = new InterCoreFifo(() => undefined);
    fifo.write(1, 0xdeadbeef);
    expect(fifo.irqLevel(0)).toBe(true);
    expect(fifo.irqLevel(1)).toBe(false);
    expect(fifo.read(0)).toBe(0xdeadbeef);
    expect(fifo.irqLevel(0)).toBe(false);
  });
});
