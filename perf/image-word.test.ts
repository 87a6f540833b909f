import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runSimBoard } from '../firmware/examples/run-sim.js';
import { withImageWord } from './image-word.js';

const committed = (program: string) => new Uint8Array(readFileSync(new URL(`../firmware/examples/pico/${program}.elf`, import.meta.url)));
const compute = committed('compute');

describe('withImageWord', () => {
  it('changes the work the compute image does: fewer rounds, another sum, fewer instructions', () => {
    const short = runSimBoard('pico', withImageWord(compute, { symbol: 'compute_rounds', value: 400 }), { simulatedSeconds: 0.5 });
    const full = runSimBoard('pico', compute, { simulatedSeconds: 0.5 });
    expect(full.uart).toContain('crc ec4f4ecc');
    expect(short.stop).toEqual({ reason: 'exited', exitCode: 0 });
    expect(short.uart).toMatch(/crc [0-9a-f]{8}\r\n/);
    expect(short.uart).not.toContain('crc ec4f4ecc');
    expect(short.simulatedNanos).toBeLessThan(full.simulatedNanos / 5);
  });

  it('changes the steps the float-heavy image takes: other results, fewer instructions', () => {
    const floatHeavy = committed('float-heavy');
    const short = runSimBoard('pico', withImageWord(floatHeavy, { symbol: 'float_steps', value: 80 }), { simulatedSeconds: 0.5 });
    const full = runSimBoard('pico', floatHeavy, { simulatedSeconds: 0.5 });
    expect(full.uart).toContain('float 43b8a5bf double 407714b7b67da885');
    expect(short.stop).toEqual({ reason: 'exited', exitCode: 0 });
    expect(short.uart).toMatch(/float [0-9a-f]{8} double [0-9a-f]{16}\r\n/);
    expect(short.uart).not.toContain('float 43b8a5bf');
    expect(short.simulatedNanos).toBeLessThan(full.simulatedNanos / 5);
  });

  it('leaves the image it was given alone and refuses an image without the symbol', () => {
    const before = compute.slice();
    withImageWord(compute, { symbol: 'compute_rounds', value: 1 });
    expect(compute).toEqual(before);
    // A Buffer (readFileSync's own) in a larger pool, at an offset: neither it nor the pool is written.
    const pool = Buffer.alloc(compute.length + 64, 0xa5);
    const buffer = pool.subarray(32, 32 + compute.length);
    buffer.set(compute);
    const poolBefore = Buffer.from(pool);
    const patched = withImageWord(buffer, { symbol: 'compute_rounds', value: 7 });
    expect(pool.equals(poolBefore)).toBe(true);
    expect(patched).not.toEqual(new Uint8Array(buffer));
    expect(runSimBoard('pico', patched, { simulatedSeconds: 0.5 }).stop).toEqual({ reason: 'exited', exitCode: 0 });
    expect(() => withImageWord(committed('hello'), { symbol: 'compute_rounds', value: 1 })).toThrow(/compute_rounds/);
    expect(() => withImageWord(compute, { symbol: 'float_steps', value: 1 })).toThrow(/float_steps/);
  });
});
