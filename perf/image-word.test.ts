import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runSimBoard } from '../firmware/examples/run-sim.js';
import { withComputeRounds } from './image-word.js';

const compute = new Uint8Array(readFileSync(new URL('../firmware/examples/pico/compute.elf', import.meta.url)));

describe('withComputeRounds', () => {
  it('changes the work the image does: fewer rounds, another sum, fewer instructions', () => {
    const short = runSimBoard('pico', withComputeRounds(compute, 400), { simulatedSeconds: 0.5 });
    const committed = runSimBoard('pico', compute, { simulatedSeconds: 0.5 });
    expect(committed.uart).toContain('crc ec4f4ecc');
    expect(short.stop).toEqual({ reason: 'exited', exitCode: 0 });
    expect(short.uart).toMatch(/crc [0-9a-f]{8}\r\n/);
    expect(short.uart).not.toContain('crc ec4f4ecc');
    expect(short.simulatedNanos).toBeLessThan(committed.simulatedNanos / 5);
  });

  it('leaves the image it was given alone and refuses an image without the symbol', () => {
    const before = compute.slice();
    withComputeRounds(compute, 1);
    expect(compute).toEqual(before);
    // A Buffer (readFileSync's own) in a larger pool, at an offset: neither it nor the pool is written.
    const pool = Buffer.alloc(compute.length + 64, 0xa5);
    const buffer = pool.subarray(32, 32 + compute.length);
    buffer.set(compute);
    const poolBefore = Buffer.from(pool);
    const patched = withComputeRounds(buffer, 7);
    expect(pool.equals(poolBefore)).toBe(true);
    expect(patched).not.toEqual(new Uint8Array(buffer));
    expect(runSimBoard('pico', patched, { simulatedSeconds: 0.5 }).stop).toEqual({ reason: 'exited', exitCode: 0 });
    const hello = new Uint8Array(readFileSync(new URL('../firmware/examples/pico/hello.elf', import.meta.url)));
    expect(() => withComputeRounds(hello, 1)).toThrow(/compute_rounds/);
  });
});
