import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { safeParseForProblems, zodIssuesToValidation } from './problem-detail.js';

function entriesOf(schema: z.ZodType, input: unknown): unknown[] {
  const result = safeParseForProblems(schema, input);
  if (result.success) throw new Error(`${JSON.stringify(input)} passed`);
  return zodIssuesToValidation(result.error.issues, 'body', input);
}

describe('integers read strictly, as pydantic\'s strict int', () => {
  const schema = z.object({ n: z.number().int().nonnegative().optional(), x: z.number().optional(), i: z.array(z.object({ t: z.int32() })).optional() });
  const intType = (loc: (string | number)[], input: unknown) => ({ type: 'int_type', loc: ['body', ...loc], msg: 'Input should be a valid integer', input });

  it.each([['1'], ['x'], [null], [true], [1.5], [[1]]])('an integer field given %j is int_type', (value) => {
    expect(entriesOf(schema, { n: value })).toEqual([intType(['n'], value)]);
  });

  it('a plain number given text stays float_type; nested and formatted integers are named too', () => {
    expect(entriesOf(schema, { x: '1' })).toEqual([{ type: 'float_type', loc: ['body', 'x'], msg: 'Input should be a valid number', input: '1' }]);
    expect(entriesOf(schema, { i: [{ t: '2' }] })).toEqual([intType(['i', 0, 't'], '2')]);
  });
});
