import { describe, expect, it } from 'vitest';
import { nulLocation, refuseNul } from './no-nul.js';

describe('nulLocation', () => {
  it('finds U+0000 in a string or a key, with its location, and nothing elsewhere', () => {
    expect(nulLocation({ a: ['x', { b: 'y\u0000' }] })).toEqual({ loc: ['a', 1, 'b'], text: 'y\u0000' });
    expect(nulLocation({ a: { 'k\u0000': 1 } })).toEqual({ loc: ['a', 'k\u0000'], text: 'k\u0000' });
    expect(nulLocation({ a: 'U+0000 written out, \\u0000 escaped', b: [1, null, true] })).toBeNull();
  });

  it('walks a value nested 200 000 deep without overflowing the stack', () => {
    let deep: unknown = '\u0000';
    for (let k = 0; k < 200_000; k++) deep = [deep];
    expect(nulLocation(deep)?.loc).toHaveLength(200_000);
  });

  it('refuseNul throws the 422 under its prefix', () => {
    expect(() => refuseNul({ q: 'a\u0000' }, ['query'])).toThrow(expect.objectContaining({ status: 422, detail: [{ type: 'value_error', loc: ['query', 'q'], msg: 'Value error, must not contain U+0000 (NUL)', input: 'a\u0000' }] }));
  });
});
