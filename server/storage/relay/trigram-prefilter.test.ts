import { describe, expect, it } from 'vitest';
import { literalRunsOf, trigramMatchOf } from './trigram-prefilter.js';

describe('trigram prefilter of a LIKE pattern', () => {
  it('splits a pattern into its literal runs, escapes resolved', () => {
    expect(literalRunsOf('%hello\\_w%')).toEqual(['hello_w']);
    expect(literalRunsOf('ab%cd_ef')).toEqual(['ab', 'cd', 'ef']);
    expect(literalRunsOf('%\\\\\\%%')).toEqual(['\\%']);
    expect(literalRunsOf('%%')).toEqual([]);
    // SQLite's LIKE matches nothing against a pattern ending in a lone escape.
    expect(literalRunsOf('ab\\')).toBeUndefined();
  });

  it('requires every run of three characters or more as an FTS5 phrase, quotes doubled', () => {
    expect(trigramMatchOf('%bench%')).toBe('"bench"');
    expect(trigramMatchOf('%say "hi"%')).toBe('"say ""hi"""');
    expect(trigramMatchOf('%uno%be%reset%')).toBe('"uno" AND "reset"');
    // Characters, not UTF-16 units: two astral characters are two, too few for a trigram.
    expect(trigramMatchOf('%😀😀%')).toBeUndefined();
    expect(trigramMatchOf('%😀😀a%')).toBe('"😀😀a"');
  });

  it('leaves to the scan what the index cannot narrow', () => {
    expect(trigramMatchOf('%be%')).toBeUndefined();
    expect(trigramMatchOf('%a_b%')).toBeUndefined();
    expect(trigramMatchOf('ab\\')).toBeUndefined();
    // SQLite's LIKE reads a pattern up to NUL only; the index would require what follows.
    expect(trigramMatchOf('%abc\0def%')).toBeUndefined();
  });
});
