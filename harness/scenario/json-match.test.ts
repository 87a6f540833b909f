import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { matchJson } from './json-match.js';
import { ScenarioVars } from './scenario-vars.js';

const subset = { exact: false };
const exact = { exact: true };

describe('matchJson', () => {
  it('subset: extra keys pass, missing or different values fail with the path', () => {
    expect(matchJson({ a: 1 }, { a: 1, b: 2 }, subset)).toBeUndefined();
    expect(matchJson({ a: { b: [1, { c: 'x' }] } }, { a: { b: [1, { c: 'y', d: 0 }] } }, subset)).toBe('$.a.b[1].c: expected "x", got "y"');
    expect(matchJson({ a: 1 }, {}, subset)).toBe('$.a: expected 1, got nothing');
    expect(matchJson([1, 2], [1, 2, 3], subset)).toMatch(/expected 2 elements, got 3/);
  });

  it('exact: extra keys fail', () => {
    expect(matchJson({ a: 1 }, { a: 1, b: 2 }, exact)).toBe('$: unexpected key b (exact match)');
    expect(matchJson({ a: 1 }, { a: 1 }, exact)).toBeUndefined();
  });

  it('operators', () => {
    expect(matchJson({ $regex: '^hb_' }, 'hb_x', subset)).toBeUndefined();
    expect(matchJson({ $regex: '^hb_' }, 'x', subset)).toMatch(/expected to match/);
    expect(matchJson({ $regex: 'a' }, 1, subset)).toMatch(/expected a string/);
    expect(matchJson({ $not: null }, 'x', subset)).toBeUndefined();
    expect(matchJson({ $not: null }, null, subset)).toMatch(/anything but null/);
    expect(matchJson({ $contains: { id: 'pico' } }, [{ id: 'uno' }, { id: 'pico', status: 'free' }], subset)).toBeUndefined();
    expect(matchJson({ $contains: { id: 'x' } }, [{ id: 'uno' }], subset)).toMatch(/no element matches/);
    expect(matchJson({ a: { $exists: false } }, { b: 1 }, subset)).toBeUndefined();
    expect(matchJson({ a: { $exists: false } }, { a: 1 }, subset)).toMatch(/expected no value/);
  });

  it('every JSON value matches itself exactly, and a changed leaf does not', () => {
    fc.assert(
      fc.property(fc.jsonValue().filter((v) => !JSON.stringify(v).includes('"$')), (v) => {
        const value = JSON.parse(JSON.stringify(v)) as unknown;
        expect(matchJson(value, value, exact)).toBeUndefined();
        expect(matchJson({ k: value }, { k: value, extra: 1 }, subset)).toBeUndefined();
        expect(matchJson({ k: value }, { k: [value, 'changed'] }, subset)).toBeDefined();
      }),
    );
  });
});

describe('ScenarioVars', () => {
  it('substitutes names and dotted paths; $${ escapes; unknown names fail naming what is set', () => {
    const vars = new ScenarioVars();
    vars.set('agent', { token: 'hb_1', list: ['a', 'b'] });
    vars.set('board', 'pico');
    expect(vars.substitute('Bearer ${agent.token} on ${board} ${agent.list.1}')).toBe('Bearer hb_1 on pico b');
    expect(vars.substitute('literal $${board}')).toBe('literal ${board}');
    expect(() => vars.substitute('${nope}')).toThrow(/\$\{nope\} is not set; set so far: agent, board/);
    expect(() => vars.substitute('${agent}')).toThrow(/not text/);
    expect(vars.substituteDeep({ a: ['${board}'], n: 1 })).toEqual({ a: ['pico'], n: 1 });
  });
});
