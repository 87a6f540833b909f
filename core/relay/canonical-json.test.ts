import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from './canonical-json.js';
import { RelayError } from './problem.js';

describe('canonicalJson (RFC 8785)', () => {
  it('serialises the example of RFC 8785 section 3.2.2', () => {
    const input = JSON.parse(
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],' +
        ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",' +
        ' "literals": [null, true, false]}',
    );
    expect(canonicalJson(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it('sorts keys by UTF-16 code units as in RFC 8785 section 3.2.3', () => {
    const input = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    // Compare text: JS objects list integer-like keys ("1") first, so parsing back would hide the order.
    const order = ['\r', '1', '\u0080', '\u00f6', '\u20ac', '\ud83d\ude00', '\ufb33'];
    const expected = `{${order.map((k) => `${JSON.stringify(k)}:${JSON.stringify(input[k as keyof typeof input])}`).join(',')}}`;
    expect(canonicalJson(input)).toBe(expected);
    // The emoji (a surrogate pair, 0xD83D...) sorts before U+FB33 by code units, not by code points.
    expect(canonicalJson({ '\ufb33': 1, '\ud83d\ude00': 2 })).toBe('{"\ud83d\ude00":2,"\ufb33":1}');
  });

  // RFC 8785 Appendix B: IEEE 754 bit patterns and their canonical text.
  const appendixB: Array<[string, string]> = [
    ['0000000000000000', '0'],
    ['8000000000000000', '0'],
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['41b3de4355555557', '333333333.33333343'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
    ['43143ff3c1cb0959', '1424953923781206.2'],
  ];
  it.each(appendixB)('serialises the double 0x%s as %s (Appendix B)', (bits, text) => {
    const value = Buffer.from(bits, 'hex').readDoubleBE(0);
    expect(canonicalJson(value)).toBe(text);
  });

  it('ignores input key order and whitespace', () => {
    expect(canonicalJson(JSON.parse('{ "b" : [1, {"y":2,"x":1}], "a": "z" }'))).toBe('{"a":"z","b":[1,{"x":1,"y":2}]}');
  });

  it.each([
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['undefined', undefined],
    ['undefined property', { a: undefined }],
    ['sparse array hole', [1, , 3]],
    ['bigint', 1n],
    ['function', () => 1],
    ['symbol', Symbol('s')],
    ['Date', new Date(0)],
    ['Map', new Map()],
    ['lone surrogate', '\ud800'],
    ['lone surrogate key', { '\udc00': 1 }],
  ])('refuses %s with RelayError', (_name, value) => {
    expect(() => canonicalJson(value)).toThrow(RelayError);
  });

  it('names where the refused value is, after siblings that were fine', () => {
    const refusal = (value: unknown) => {
      try {
        canonicalJson(value);
      } catch (error) {
        return { message: (error as RelayError).message, loc: (error as RelayError).problems.map((p) => p.path) };
      }
      throw new Error('canonicalJson accepted a value it must refuse');
    };
    expect(refusal({ a: [1, { b: 2 }], c: { d: [true, Number.NaN] } })).toEqual({ message: 'cannot canonicalise at c.d.1: number NaN has no JSON form', loc: [['c', 'd', '1']] });
    expect(refusal({ a: { b: 1 }, '\udc00': 1 })).toEqual({ message: 'cannot canonicalise at \udc00: key holds a lone UTF-16 surrogate', loc: [['\udc00']] });
    expect(refusal(undefined)).toEqual({ message: 'cannot canonicalise: undefined has no JSON form', loc: [[]] });
  });

  it('refuses cycles but allows a shared (acyclic) subobject twice', () => {
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow(/cyclic/);
  });

  it('accepts null-prototype objects', () => {
    const o = Object.create(null) as Record<string, unknown>;
    o.k = 'v';
    expect(canonicalJson(o)).toBe('{"k":"v"}');
  });

  // RFC 8785 written plainly, as an oracle: keys sorted by code units, everything else JSON.stringify's.
  const plainJcs = (value: unknown): string => {
    if (Array.isArray(value)) return `[${value.map(plainJcs).join(',')}]`;
    if (value !== null && typeof value === 'object') {
      const object = value as Record<string, unknown>;
      return `{${Object.keys(object)
        .sort()
        .map((key) => `${JSON.stringify(key)}:${plainJcs(object[key])}`)
        .join(',')}}`;
    }
    return JSON.stringify(value);
  };

  it('gives the plain reading of RFC 8785 for any JSON value, any strings in it', () => {
    const agrees = (value: unknown) => {
      expect(canonicalJson(value)).toBe(plainJcs(value));
    };
    const text = fc.string({ unit: 'binary' }).filter((s) => s.isWellFormed());
    fc.assert(fc.property(fc.jsonValue({ stringUnit: 'binary' }).filter((v) => plainJcs(v).isWellFormed()), agrees));
    fc.assert(fc.property(fc.dictionary(text, text), agrees));
  });

  it('writes and refuses the same past the depth where its unwatched walk starts again watched', () => {
    let deep: unknown = { leaf: [1, 'two'] };
    for (let k = 0; k < 200; k++) deep = k % 2 === 0 ? [deep] : { k: deep };
    expect(canonicalJson(deep)).toBe(plainJcs(deep));
    let refused: unknown = { bad: Number.NaN };
    for (let k = 0; k < 100; k++) refused = [refused];
    expect(() => canonicalJson(refused)).toThrow(new RegExp(`at ${Array.from({ length: 100 }, () => '0').join('\\.')}\\.bad: number NaN has no JSON form`));
    const cyclic: unknown[] = [];
    cyclic.push([[cyclic]]);
    expect(() => canonicalJson(cyclic)).toThrow(/at 0\.0\.0: value is cyclic/);
  });
});
