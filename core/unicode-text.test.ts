import { describe, expect, it } from 'vitest';
import { codePointLength, hasLoneSurrogate, withLoneSurrogatesReplaced } from './unicode-text.js';

describe('unicode text rules', () => {
  it.each([
    ['a high surrogate alone', '\ud800', true],
    ['a low surrogate after text', 'a\udc00', true],
    ['a pair in the wrong order', '\ude00\ud83d', true],
    ['a high surrogate at the end', 'ok\ud83d', true],
    ['a pair', '\ud83d\ude00', false],
    ['hex, one byte per character', 'ab'.repeat(32), false],
    ['text outside Latin-1', 'Zürich €', false],
    ['nothing', '', false],
  ])('tells %s (lone surrogate: %s)', (_name, text, lone) => {
    expect(hasLoneSurrogate(text)).toBe(lone);
  });

  it('replaces each lone surrogate by U+FFFD and keeps pairs', () => {
    expect(withLoneSurrogatesReplaced('a\ud800b\ud83d\ude00\udc00')).toBe('a\ufffdb\ud83d\ude00\ufffd');
    expect(withLoneSurrogatesReplaced('\ude00\ud83d')).toBe('\ufffd\ufffd');
    expect(hasLoneSurrogate(withLoneSurrogatesReplaced('x\udbff'))).toBe(false);
  });

  it('counts code points, a pair as one', () => {
    expect(codePointLength('a\ud83d\ude00b')).toBe(3);
    expect(codePointLength('\ud800')).toBe(1);
  });
});
