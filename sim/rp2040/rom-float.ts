/**
 * The soft float ('SF') and soft double ('SD') tables of the project's own RP2040 boot ROM,
 * as TypeScript that works on the caller's registers (AAPCS: a float in r0, a double in r0:r1
 * low word first, a second double in r2:r3; results in r0, or r0:r1).
 *
 * Layout: RP2040 datasheet §2.8.3.2 (the same offsets the Pico SDK's `sf_table.h` names); the SD
 * table repeats the SF offsets with doubles. Semantics, decision 0251:
 * - arithmetic and square root are IEEE-754 binary32/binary64, round to nearest even, with
 *   infinities, gradual underflow and NaN results (the default NaN 0x7fc00000 or
 *   0x7ff8000000000000). The host's binary64 arithmetic is exact for doubles; for floats the
 *   binary64 result of one operation rounded once more is the correctly rounded binary32 one
 *   (53 >= 2 * 24 + 2).
 * - conversions to integers and fixed point round towards minus infinity and saturate, as the
 *   datasheet states (the SDK's C-style `_z` wrappers depend on it); a NaN converts as the
 *   infinity of its sign; unsigned conversions of negative values give 0.
 * - comparisons order the bit patterns as sign-magnitude numbers (so -0 == +0, and a NaN sorts
 *   beyond the infinity of its sign), as the ROM's fcmp does.
 * - sin, cos, tan, atan2, exp and ln use the host's binary64 functions, rounded once.
 */

/** A table entry: byte offset in the table and the function on the caller's registers. */
export interface RomTableFunction {
  offset: number;
  name: string;
  run(regs: RomRegisters): void;
}

/** The core registers a ROM function reads its arguments from and writes its results to. */
export interface RomRegisters {
  readonly r: Uint32Array;
  /** Sets N, Z, C, V as a compare instruction would (the `_flags` compare variants return in them). */
  setFlags(flags: { n: boolean; z: boolean; c: boolean; v: boolean }): void;
}

const scratch = new DataView(new ArrayBuffer(8));
const f32 = (bits: number) => (scratch.setUint32(0, bits >>> 0, true), scratch.getFloat32(0, true));
/** Float bits of `value`; every NaN becomes the default NaN (the host's NaN bits vary by CPU: x86 makes 0xffc00000). */
const fromF32 = (value: number) => (Number.isNaN(value) ? 0x7fc00000 : (scratch.setFloat32(0, value, true), scratch.getUint32(0, true)));
const f64 = (lo: number, hi: number) => (scratch.setUint32(0, lo >>> 0, true), scratch.setUint32(4, hi >>> 0, true), scratch.getFloat64(0, true));
function setF64(regs: RomRegisters, first: number, value: number) {
  if (Number.isNaN(value)) {
    regs.r[first] = 0;
    regs.r[first + 1] = 0x7ff80000;
    return;
  }
  scratch.setFloat64(0, value, true);
  regs.r[first] = scratch.getUint32(0, true);
  regs.r[first + 1] = scratch.getUint32(4, true);
}
const int64 = (lo: number, hi: number) => BigInt.asIntN(64, (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0));
const uint64 = (lo: number, hi: number) => (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);
function setInt64(regs: RomRegisters, value: bigint) {
  const bits = BigInt.asUintN(64, value);
  regs.r[0] = Number(bits & 0xffffffffn);
  regs.r[1] = Number(bits >> 32n);
}
/** Whether the float in `bits` has its sign bit set (what a NaN converts by). */
const negativeBits32 = (bits: number) => (bits & 0x80000000) !== 0;

/**
 * floor(value) clamped to [min, max]; NaN as the infinity of its sign. `value` is exact: a
 * float or double times a power of two.
 */
function floorSaturate(value: number, negative: boolean, min: bigint, max: bigint): bigint {
  if (Number.isNaN(value)) return negative ? min : max;
  if (value === Infinity) return max;
  if (value === -Infinity) return min;
  const floored = Math.floor(value);
  if (floored >= Number(max)) return max;
  if (floored <= Number(min)) return min;
  return BigInt(floored);
}

/**
 * `value * 2^-fractionBits` correctly rounded to binary32 or binary64. For binary32, integers
 * wider than 53 bits are first narrowed with round-to-odd, so that the final rounding is the
 * only one that counts (rounding to 53 bits, then 24, could round a tie twice).
 */
function bigToFloat(value: bigint, fractionBits: number, single: boolean): number {
  const negative = value < 0n;
  let magnitude = negative ? -value : value;
  let exponent = -fractionBits;
  const length = magnitude.toString(2).length;
  // Number(bigint) rounds correctly to binary64 by itself; only binary32 needs the odd narrowing.
  if (single && length > 53) {
    const shift = BigInt(length - 53);
    const sticky = (magnitude & ((1n << shift) - 1n)) !== 0n;
    magnitude = (magnitude >> shift) | (sticky ? 1n : 0n);
    exponent += Number(shift);
  }
  // Scale in two steps so that 2^exponent itself never overflows or underflows on the way.
  const half = Math.trunc(exponent / 2);
  const result = Number(magnitude) * 2 ** half * 2 ** (exponent - half);
  const signed = negative ? -result : result;
  return single ? Math.fround(signed) : signed;
}

/** -1, 0 or 1 comparing sign-magnitude bit patterns (32 or 64 bit) as numbers. */
function compareBits(a: bigint, b: bigint, width: 32 | 64): { order: number; a: bigint; b: bigint } {
  const sign = 1n << BigInt(width - 1);
  const twos = (x: bigint) => (x & sign ? -(x & (sign - 1n)) : x);
  const ta = twos(a);
  const tb = twos(b);
  return { order: ta < tb ? -1 : ta > tb ? 1 : 0, a: ta, b: tb };
}

/** Flags as `subs` of the two's complement forms leaves them: what the `_flags` compares return. */
function compareFlags(regs: RomRegisters, a: bigint, b: bigint, width: 32 | 64) {
  const cmp = compareBits(a, b, width);
  const mask = (1n << BigInt(width)) - 1n;
  const ua = cmp.a & mask;
  const ub = cmp.b & mask;
  const difference = BigInt.asIntN(width, cmp.a - cmp.b);
  const exact = cmp.a - cmp.b;
  regs.setFlags({ n: difference < 0n, z: difference === 0n, c: ua >= ub, v: difference !== exact });
  return difference;
}

const INT32 = [-(2n ** 31n), 2n ** 31n - 1n] as const;
const UINT32 = [0n, 2n ** 32n - 1n] as const;
const INT64 = [-(2n ** 63n), 2n ** 63n - 1n] as const;
const UINT64 = [0n, 2n ** 64n - 1n] as const;

/** One SF/SD layout; `single` picks how arguments and results are held. */
function table(single: boolean): RomTableFunction[] {
  // Argument i of the float or double kind: floats in r0, r1; doubles in r0:r1, r2:r3.
  const arg = (regs: RomRegisters, i: number) => (single ? f32(regs.r[i]!) : f64(regs.r[2 * i]!, regs.r[2 * i + 1]!));
  const argNegative = (regs: RomRegisters) => negativeBits32(single ? regs.r[0]! : regs.r[1]!);
  const ret = (regs: RomRegisters, value: number) => {
    if (single) regs.r[0] = fromF32(Math.fround(value));
    else setF64(regs, 0, value);
  };
  const bits = (regs: RomRegisters, i: number) => (single ? BigInt(regs.r[i]! >>> 0) : uint64(regs.r[2 * i]!, regs.r[2 * i + 1]!));
  const width = single ? 32 : 64;
  // The register after the value argument holds the fixed point position (r1 for a float, r2 for a double).
  const fixArg = (regs: RomRegisters) => regs.r[single ? 1 : 2]! | 0;
  const toInt = (range: readonly [bigint, bigint], fractional: boolean, wide: boolean) => (regs: RomRegisters) => {
    const scaled = arg(regs, 0) * 2 ** (fractional ? fixArg(regs) : 0);
    const result = floorSaturate(scaled, argNegative(regs), range[0], range[1]);
    if (wide) setInt64(regs, result);
    else regs.r[0] = Number(BigInt.asUintN(32, result));
  };
  const fromInt = (signed: boolean, fractional: boolean, wide: boolean) => (regs: RomRegisters) => {
    const raw = wide
      ? signed
        ? int64(regs.r[0]!, regs.r[1]!)
        : uint64(regs.r[0]!, regs.r[1]!)
      : BigInt(signed ? regs.r[0]! | 0 : regs.r[0]! >>> 0);
    const fractionBits = fractional ? regs.r[wide ? 2 : 1]! | 0 : 0;
    const value = bigToFloat(raw, fractionBits, single);
    if (single) regs.r[0] = fromF32(value);
    else setF64(regs, 0, value);
  };
  const unary = (fn: (x: number) => number) => (regs: RomRegisters) => ret(regs, fn(arg(regs, 0)));
  const cmp = (regs: RomRegisters) => {
    regs.r[0] = compareBits(bits(regs, 0), bits(regs, 1), width).order >>> 0;
  };
  const cmpFlags = (regs: RomRegisters) => {
    const difference = compareFlags(regs, bits(regs, 0), bits(regs, 1), width);
    if (single) regs.r[0] = Number(BigInt.asUintN(32, difference));
    else setInt64(regs, difference);
  };
  const entries: Array<[number, string, (regs: RomRegisters) => void]> = [
    [0x00, 'add', (regs) => ret(regs, arg(regs, 0) + arg(regs, 1))],
    [0x04, 'sub', (regs) => ret(regs, arg(regs, 0) - arg(regs, 1))],
    [0x08, 'mul', (regs) => ret(regs, arg(regs, 0) * arg(regs, 1))],
    [0x0c, 'div', (regs) => ret(regs, arg(regs, 0) / arg(regs, 1))],
    [0x10, 'cmp', cmp],
    [0x14, 'cmp_flags', cmpFlags],
    [0x18, 'sqrt', unary(Math.sqrt)],
    [0x1c, '2int', toInt(INT32, false, false)],
    [0x20, '2fix', toInt(INT32, true, false)],
    [0x24, '2uint', toInt(UINT32, false, false)],
    [0x28, '2ufix', toInt(UINT32, true, false)],
    [0x2c, 'int2', fromInt(true, false, false)],
    [0x30, 'fix2', fromInt(true, true, false)],
    [0x34, 'uint2', fromInt(false, false, false)],
    [0x38, 'ufix2', fromInt(false, true, false)],
    [0x3c, 'cos', unary(Math.cos)],
    [0x40, 'sin', unary(Math.sin)],
    [0x44, 'tan', unary(Math.tan)],
    [
      0x48,
      'sincos',
      (regs) => {
        const x = arg(regs, 0);
        if (single) {
          regs.r[0] = fromF32(Math.fround(Math.sin(x)));
          regs.r[1] = fromF32(Math.fround(Math.cos(x)));
        } else {
          setF64(regs, 0, Math.sin(x));
          setF64(regs, 2, Math.cos(x));
        }
      },
    ],
    [0x4c, 'exp', unary(Math.exp)],
    [0x50, 'ln', unary(Math.log)],
    [0x54, 'cmp_basic', cmp],
    [0x58, 'atan2', (regs) => ret(regs, Math.atan2(arg(regs, 0), arg(regs, 1)))],
    [0x5c, 'int642', fromInt(true, false, true)],
    [0x60, 'fix642', fromInt(true, true, true)],
    [0x64, 'uint642', fromInt(false, false, true)],
    [0x68, 'ufix642', fromInt(false, true, true)],
    [0x6c, '2int64', toInt(INT64, false, true)],
    [0x70, '2fix64', toInt(INT64, true, true)],
    [0x74, '2uint64', toInt(UINT64, false, true)],
    [0x78, '2ufix64', toInt(UINT64, true, true)],
    [
      0x7c,
      single ? 'float2double' : 'double2float',
      (regs) => {
        if (single) setF64(regs, 0, f32(regs.r[0]!));
        else regs.r[0] = fromF32(Math.fround(f64(regs.r[0]!, regs.r[1]!)));
      },
    ],
  ];
  const prefix = single ? 'f' : 'd';
  const kind = single ? 'float' : 'double';
  return entries.map(([offset, name, run]) => ({
    offset,
    name: name.startsWith('2') ? `${kind}${name}` : name.endsWith('2') && name !== 'atan2' ? `${name}${kind}` : name.includes('2') && name !== 'atan2' ? name : `${prefix}${name}`,
    run,
  }));
}

/** The soft float table: 32 entries, 0x80 bytes (the V2 and later layout). */
export const softFloatTable: readonly RomTableFunction[] = table(true);
/** The soft double table, same offsets with doubles. */
export const softDoubleTable: readonly RomTableFunction[] = table(false);
/** Bytes in each table. */
export const SOFT_TABLE_BYTES = 0x80;
