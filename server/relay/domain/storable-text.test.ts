import { describe, expect, it } from 'vitest';
import { refuseUnstorableText, unstorableText } from './storable-text.js';

describe('unstorableText', () => {
  it('finds U+0000 or a lone surrogate in a string or a key, with its location, and nothing elsewhere', () => {
    expect(unstorableText({ a: ['x', { b: 'y\u0000' }] })).toEqual({ loc: ['a', 1, 'b'], text: 'y\u0000', problem: 'nul' });
    expect(unstorableText({ a: { 'k\udc00': 1 } })).toEqual({ loc: ['a', 'k\udc00'], text: 'k\udc00', problem: 'lone-surrogate' });
    expect(unstorableText({ a: 'U+0000 written out, \\u0000 escaped, a pair 😀', b: [1, null, true] })).toBeNull();
  });

  it('walks a value nested 200 000 deep without overflowing the stack', () => {
    let deep: unknown = '\u0000';
    for (let k = 0; k < 200_000; k++) deep = [deep];
    expect(unstorableText(deep)?.loc).toHaveLength(200_000);
  });

  it('refuseUnstorableText refuses the input under its prefix, with the problem the translator words', () => {
    expect(() => refuseUnstorableText({ q: 'a\u0000' }, ['query'])).toThrow(
      expect.objectContaining({ code: 'invalid_input', extra: { input: { where: ['query', 'q'], problems: [{ path: [], code: 'nul_character', input: 'a\u0000' }] } } }),
    );
    expect(() => refuseUnstorableText({ name: '\ud800' }, ['body'])).toThrow(
      expect.objectContaining({ code: 'invalid_input', extra: { input: { where: ['body', 'name'], problems: [{ path: [], code: 'lone_surrogate', input: '\ud800' }] } } }),
    );
  });
});
