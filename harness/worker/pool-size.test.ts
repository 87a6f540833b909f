import { describe, expect, it } from 'vitest';
import { checkPoolSizes, cliPoolSizes, hostPoolSize, parsePoolSizeOptions, poolSizeOf } from './pool-size.js';
import { MAX_POOL_SIZE } from '../../wire/worker/worker-schemas.js';

describe('pool sizes (decision 0510)', () => {
  it('gives emulated boards their size, a board its own, and a physical board one', () => {
    const sizes = { all: 3, byBoard: { uno: 5 } };
    expect(poolSizeOf('pico', 'sim', sizes)).toBe(3);
    expect(poolSizeOf('uno', 'sim', sizes)).toBe(5);
    expect(poolSizeOf('netduinoplus2', 'qemu', sizes)).toBe(3);
    expect(poolSizeOf('pico', 'probe', sizes)).toBe(1);
    expect(poolSizeOf('pico', 'none', sizes)).toBe(1);
    expect(poolSizeOf('pico', 'sim', {})).toBe(1);
  });

  it("defaults the CLI's in-process engines to the host's cores, emulator processes to one", () => {
    const sizes = cliPoolSizes([]);
    expect(poolSizeOf('pico', 'sim', sizes)).toBe(hostPoolSize());
    expect(poolSizeOf('pico', 'mock', sizes)).toBe(1);
    expect(poolSizeOf('netduinoplus2', 'qemu', sizes)).toBe(1);
    expect(poolSizeOf('netduinoplus2', 'qemu', cliPoolSizes(['2']))).toBe(2);
    expect(poolSizeOf('pico', 'sim', cliPoolSizes(['uno=4']))).toBe(hostPoolSize());
  });

  it('refuses 0, fractions and sizes above the bound, naming the board', () => {
    expect(parsePoolSizeOptions(['2', 'uno=4'])).toEqual({ all: 2, byBoard: { uno: 4 } });
    expect(() => parsePoolSizeOptions(['0'])).toThrow('the pool size of every emulated board must be a whole number from 1 to 64, not 0');
    expect(() => parsePoolSizeOptions([`pico=${MAX_POOL_SIZE + 1}`])).toThrow(`the pool size of board pico must be a whole number from 1 to 64, not ${MAX_POOL_SIZE + 1}`);
    expect(() => parsePoolSizeOptions(['pico=two'])).toThrow(/expected N or BOARD=N/);
    expect(() => checkPoolSizes({ byBoard: { uno: 1.5 } })).toThrow(/board uno .* not 1.5/);
  });
});
