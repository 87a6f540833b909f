import { describe, expect, it } from 'vitest';
import { type RomRegisters, softDoubleTable, softFloatTable } from './rom-float.js';

const view = new DataView(new ArrayBuffer(8));
const f = (x: number) => (view.setFloat32(0, x, true), view.getUint32(0, true));
const d = (x: number): [number, number] => (view.setFloat64(0, x, true), [view.getUint32(0, true), view.getUint32(4, true)]);

/** Calls table entry `name` with the registers r0..r3; returns the registers and flags after. */
function call(table: typeof softFloatTable, name: string, r: number[]) {
  const entry = table.find((e) => e.name === name);
  if (!entry) throw new Error(`no ${name} in the table: ${table.map((e) => e.name).join(', ')}`);
  const regs: RomRegisters & { flags?: { n: boolean; z: boolean; c: boolean; v: boolean } } = {
    r: Uint32Array.from([...r, 0, 0, 0, 0]),
    setFlags(flags) {
      regs.flags = flags;
    },
  };
  entry.run(regs);
  return regs;
}

describe('soft float and double tables', () => {
  it('have 32 entries at the datasheet offsets 0x00..0x7c, with the functions the SDK calls where it expects them', () => {
    expect(softFloatTable.map((e) => e.offset)).toEqual(Array.from({ length: 32 }, (_, i) => i * 4));
    const at = (table: typeof softFloatTable, offset: number) => table.find((e) => e.offset === offset)!.name;
    expect([at(softFloatTable, 0x00), at(softFloatTable, 0x1c), at(softFloatTable, 0x48), at(softFloatTable, 0x58), at(softFloatTable, 0x7c)]).toEqual([
      'fadd',
      'float2int',
      'fsincos',
      'fatan2',
      'float2double',
    ]);
    expect([at(softDoubleTable, 0x0c), at(softDoubleTable, 0x5c), at(softDoubleTable, 0x7c)]).toEqual(['ddiv', 'int642double', 'double2float']);
  });

  it('round to nearest even, overflow to infinity, underflow gradually, and make NaN of invalid operations', () => {
    expect(call(softFloatTable, 'fadd', [f(1), 0x33800000]).r[0]).toBe(f(1));
    expect(call(softFloatTable, 'fadd', [0x3f800001, 0x33800000]).r[0]).toBe(0x3f800002);
    expect(call(softFloatTable, 'fmul', [0x7f7fffff, f(2)]).r[0]).toBe(0x7f800000);
    expect(call(softFloatTable, 'fmul', [0x00800000, f(0.5)]).r[0]).toBe(0x00400000);
    expect(call(softFloatTable, 'fdiv', [f(0), f(0)]).r[0]).toBe(0x7fc00000);
    expect(call(softFloatTable, 'fsqrt', [f(-1)]).r[0]).toBe(0x7fc00000);
    const [lo, hi] = d(1);
    const [tinyLo, tinyHi] = d(2 ** -53);
    expect([...call(softDoubleTable, 'dadd', [lo, hi, tinyLo, tinyHi]).r.subarray(0, 2)]).toEqual(d(1));
  });

  it('convert to integers rounding towards minus infinity and saturating, NaN as the infinity of its sign', () => {
    expect(call(softFloatTable, 'float2int', [f(-1.5)]).r[0]! | 0).toBe(-2);
    expect(call(softFloatTable, 'float2int', [f(3e9)]).r[0]).toBe(0x7fffffff);
    expect(call(softFloatTable, 'float2int', [0xffc00000]).r[0]).toBe(0x80000000);
    expect(call(softFloatTable, 'float2uint', [f(-0.5)]).r[0]).toBe(0);
    expect(call(softFloatTable, 'float2fix', [f(1.75), 4]).r[0]).toBe(28);
    const [lo, hi] = d(-1e300);
    expect([...call(softDoubleTable, 'double2int64', [lo, hi]).r.subarray(0, 2)]).toEqual([0, 0x80000000]);
  });

  it('convert 64-bit integers to float with one rounding, not two', () => {
    // 2^60 + 2^36 + 1: binary64 first would round to the float tie 2^60 + 2^36, then to even 2^60.
    const v = 2n ** 60n + 2n ** 36n + 1n;
    const r = call(softFloatTable, 'int642float', [Number(v & 0xffffffffn), Number(v >> 32n)]).r[0];
    expect(r).toBe(0x5d800001);
    const max = 2n ** 63n - 1n;
    expect([...call(softDoubleTable, 'int642double', [Number(max & 0xffffffffn), Number(max >> 32n)]).r.subarray(0, 2)]).toEqual(d(2 ** 63));
  });

  it('compare as sign-magnitude numbers, with flags as a compare instruction leaves them', () => {
    expect(call(softFloatTable, 'fcmp', [f(-0), f(0)]).r[0]).toBe(0);
    expect(call(softFloatTable, 'fcmp', [f(1), f(2)]).r[0]).toBe(0xffffffff);
    // Signed less than: N != V (the carry is the unsigned borrow of the two's complement forms).
    expect(call(softFloatTable, 'fcmp_flags', [f(-1), f(1)]).flags).toEqual({ n: true, z: false, c: true, v: false });
    expect(call(softFloatTable, 'fcmp_flags', [f(2), f(2)]).flags).toMatchObject({ z: true, c: true });
  });

  it('return sine and cosine together from sincos: floats in r0, r1; doubles in r0:r1, r2:r3', () => {
    expect([...call(softFloatTable, 'fsincos', [f(0)]).r.subarray(0, 2)]).toEqual([f(0), f(1)]);
    const [lo, hi] = d(Math.PI / 2);
    const r = call(softDoubleTable, 'dsincos', [lo, hi]).r;
    expect([r[0], r[1]]).toEqual(d(1));
    expect([r[2], r[3]]).toEqual(d(Math.cos(Math.PI / 2)));
  });
});
