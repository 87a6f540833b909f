import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CLAIM_BODY_MAX_CODE_POINTS, claimId, claimKinds, fileId, validateClaim } from './claim.js';

describe('claimId and fileId', () => {
  it('hashes the x.claim/1 text with an independent SHA-256', () => {
    const claim = { kind: 'statement', title: 'LED blinks at 1 Hz', body: 'Measured with a scope.\nTwice.' };
    const expected = createHash('sha256')
      .update(Buffer.from('x.claim/1\nstatement\nLED blinks at 1 Hz\nMeasured with a scope.\nTwice.', 'utf8'))
      .digest('hex');
    expect(claimId(claim)).toBe(expected);
  });

  it('hashes the empty file to the well-known SHA-256 of nothing', () => {
    expect(fileId(new Uint8Array(0))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });
});

describe('validateClaim', () => {
  it('returns the typed claim for valid input', () => {
    expect(validateClaim({ kind: 'question', title: 'Does it boot?', body: '' })).toEqual({
      ok: true,
      value: { kind: 'question', title: 'Does it boot?', body: '' },
    });
    for (const kind of claimKinds) expect(validateClaim({ kind, title: 't', body: 'b' }).ok).toBe(true);
  });

  it('reports every missing field', () => {
    const result = validateClaim({});
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.problems.map((p) => [p.path, p.code])).toEqual([
        [['kind'], 'missing'],
        [['title'], 'missing'],
        [['body'], 'missing'],
      ]);
    }
  });

  it('refuses a line break in kind or title (line_break), but allows one in body', () => {
    for (const [field, value] of [
      ['title', 'one\ntwo'],
      ['title', 'one\rtwo'],
      ['kind', 'statement\nx'],
    ] as const) {
      const result = validateClaim({ kind: 'statement', title: 't', body: 'b', [field]: value });
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.problems).toMatchObject([{ path: [field], code: 'line_break' }]);
    }
    expect(validateClaim({ kind: 'statement', title: 't', body: 'a\nb\r\n' }).ok).toBe(true);
  });

  it('refuses an unknown kind (not_one_of) naming the allowed kinds', () => {
    const result = validateClaim({ kind: 'rumour', title: 't', body: 'b' });
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.problems).toMatchObject([{ path: ['kind'], code: 'not_one_of', input: 'rumour' }]);
      expect(result.problems[0]?.expected).toContain('firmware-result');
    }
  });

  it('counts lengths in code points: 200 astral characters fit a title, 201 do not', () => {
    const astral = '\u{1F600}';
    expect(validateClaim({ kind: 'statement', title: astral.repeat(200), body: '' }).ok).toBe(true);
    const result = validateClaim({ kind: 'statement', title: astral.repeat(201), body: '' });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.problems).toMatchObject([{ path: ['title'], code: 'too_long', limit: 200 }]);
    expect(validateClaim({ kind: 'statement', title: 't', body: astral.repeat(CLAIM_BODY_MAX_CODE_POINTS) }).ok).toBe(true);
    const body = validateClaim({ kind: 'statement', title: 't', body: 'x'.repeat(CLAIM_BODY_MAX_CODE_POINTS + 1) });
    expect(body.ok).toBe(false);
    if (!body.ok) expect(body.problems).toMatchObject([{ path: ['body'], code: 'too_long', limit: 32000 }]);
  });

  it('refuses empty titles, non-strings, lone surrogates, extra fields and non-objects', () => {
    const cases: Array<[unknown, string]> = [
      [{ kind: 'statement', title: '', body: '' }, 'too_short'],
      [{ kind: 'statement', title: 5, body: '' }, 'not_string'],
      [{ kind: 'statement', title: 't', body: 'a\ud800b' }, 'lone_surrogate'],
      [{ kind: 'statement', title: 't', body: '', file: 'x' }, 'extra'],
      [[], 'not_object'],
      [null, 'not_object'],
    ];
    for (const [input, code] of cases) {
      const result = validateClaim(input);
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.problems.map((p) => p.code)).toEqual([code]);
    }
  });
});
