import { describe, expect, it } from 'vitest';
import { latin1FormPairs } from './latin1-form.js';

const bytes = (text: string) => Buffer.from(text, 'latin1');

describe('latin1FormPairs', () => {
  it('reads a percent escape as the one Latin-1 code point of its byte, where URLSearchParams reads UTF-8', () => {
    expect(latin1FormPairs(bytes('email=caf%E9%40example.org&note=%FF%A0'))).toEqual([
      ['email', 'café@example.org'],
      ['note', 'ÿ\u00a0'],
    ]);
    expect([...new URLSearchParams('email=caf%E9')]).toEqual([['email', 'caf\ufffd']]);
  });

  it('reads raw bytes above 0x7f as Latin-1 too, + as a space, and a name without = as an empty value', () => {
    expect(latin1FormPairs(Buffer.from([0x6e, 0x3d, 0xe9, 0x2b, 0x61, 0x26, 0x6b]))).toEqual([
      ['n', 'é a'],
      ['k', ''],
    ]);
  });

  it('keeps a % not followed by two hex digits, skips empty pairs, and splits on the first =', () => {
    expect(latin1FormPairs(bytes('a=100%&&b=%zz%4&c=x=y'))).toEqual([
      ['a', '100%'],
      ['b', '%zz%4'],
      ['c', 'x=y'],
    ]);
    expect(latin1FormPairs(bytes(''))).toEqual([]);
  });
});
