import { describe, expect, it } from 'vitest';
import { RelayError, describeProblem, unwrap } from './problem.js';

describe('unwrap', () => {
  it('returns the value of a valid result', () => {
    expect(unwrap({ ok: true, value: 7 }, 'number')).toBe(7);
  });

  it('throws a RelayError whose message names the place, the code and its bound', () => {
    const problems = [
      { path: ['body', 'title'], code: 'too_long' as const, limit: 280 },
      { path: ['body', 'kind'], code: 'not_one_of' as const, expected: ['statement', 'question'] },
    ];
    let thrown: unknown;
    try {
      unwrap({ ok: false, problems }, 'claim');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(RelayError);
    expect((thrown as RelayError).message).toBe('invalid claim at body.title: too_long (limit 280) (and 1 more)');
    expect((thrown as RelayError).problems).toEqual(problems);
  });
});

describe('describeProblem', () => {
  it('says the bare code when nothing bounds it', () => {
    expect(describeProblem({ path: [], code: 'missing' })).toBe('missing');
  });

  it('lists what was expected and the note', () => {
    expect(describeProblem({ path: ['kind'], code: 'not_one_of', expected: ['a', 'b'], note: 'a kind' })).toBe(
      'not_one_of (expected a, b; a kind)',
    );
  });
});
