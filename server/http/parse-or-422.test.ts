import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { HttpError, parseOr422 } from './http-error.js';

function detailOf(schema: z.ZodType, input: unknown): unknown[] {
  try {
    parseOr422(schema, input, 'body');
  } catch (err) {
    expect(err).toBeInstanceOf(HttpError);
    expect((err as HttpError).status).toBe(422);
    return (err as HttpError).detail as unknown[];
  }
  throw new Error('expected a 422');
}

describe('parseOr422: zod issues as one 422, in pydantic v2 words', () => {
  // Regression: the relay's own converter said "at most 1 characters".
  it('a one-character limit is "1 character", singular, as pydantic writes it', () => {
    expect(detailOf(z.object({ c: z.string().max(1) }), { c: 'ab' })).toEqual([
      { type: 'string_too_long', loc: ['body', 'c'], msg: 'String should have at most 1 character', input: 'ab', ctx: { max_length: 1 } },
    ]);
    expect(detailOf(z.object({ c: z.string().min(1) }), { c: '' })).toEqual([
      { type: 'string_too_short', loc: ['body', 'c'], msg: 'String should have at least 1 character', input: '', ctx: { min_length: 1 } },
    ]);
  });

  // Regression: the relay's own converter mapped every minimum, `gt(0)` included, to greater_than_equal.
  it('gt(0) is greater_than with ctx.gt; gte(0) is greater_than_equal', () => {
    expect(detailOf(z.object({ n: z.number().gt(0) }), { n: 0 })).toEqual([
      { type: 'greater_than', loc: ['body', 'n'], msg: 'Input should be greater than 0', input: 0, ctx: { gt: 0 } },
    ]);
    expect(detailOf(z.object({ n: z.number().int().positive() }), { n: 0 })).toEqual([
      { type: 'greater_than', loc: ['body', 'n'], msg: 'Input should be greater than 0', input: 0, ctx: { gt: 0 } },
    ]);
    expect(detailOf(z.object({ n: z.number().gte(0) }), { n: -1 })).toEqual([
      { type: 'greater_than_equal', loc: ['body', 'n'], msg: 'Input should be greater than or equal to 0', input: -1, ctx: { ge: 0 } },
    ]);
    expect(detailOf(z.object({ n: z.number().lt(5) }), { n: 5 })).toEqual([
      { type: 'less_than', loc: ['body', 'n'], msg: 'Input should be less than 5', input: 5, ctx: { lt: 5 } },
    ]);
  });

  // Regression: a body that is no object read "object_type", "Input should be a valid object", words no FastAPI service uses.
  it('a body or a field that is no object is model_attributes_type, as FastAPI validates a model', () => {
    const schema = z.object({ inner: z.object({ a: z.string() }) });
    expect(detailOf(schema, [1])).toEqual([
      { type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', input: [1] },
    ]);
    expect(detailOf(schema, { inner: 'x' })).toEqual([
      { type: 'model_attributes_type', loc: ['body', 'inner'], msg: 'Input should be a valid dictionary or object to extract fields from', input: 'x' },
    ]);
  });

  // Regression: zod's JSON type names leaked through as array_type, boolean_type and number_type.
  it('a value of the wrong type is named as pydantic names it: list_type, bool_type, float_type, string_type', () => {
    const schema = z.object({ v: z.array(z.string()), listed: z.boolean(), t: z.number(), name: z.string() });
    expect(detailOf(schema, { v: 'a', listed: 'x', t: 'x', name: 1 })).toEqual([
      { type: 'list_type', loc: ['body', 'v'], msg: 'Input should be a valid list', input: 'a' },
      { type: 'bool_type', loc: ['body', 'listed'], msg: 'Input should be a valid boolean', input: 'x' },
      { type: 'float_type', loc: ['body', 't'], msg: 'Input should be a valid number', input: 'x' },
      { type: 'string_type', loc: ['body', 'name'], msg: 'Input should be a valid string', input: 1 },
    ]);
  });

  it('a pattern shows its source alone, as pydantic does', () => {
    expect(detailOf(z.object({ id: z.string().regex(/^[0-9a-f]{4}$/, 'custom words') }), { id: 'xyz' })).toEqual([
      { type: 'string_pattern_mismatch', loc: ['body', 'id'], msg: "String should match pattern '^[0-9a-f]{4}$'", input: 'xyz', ctx: { pattern: '^[0-9a-f]{4}$' } },
    ]);
  });

  it('lists count items in the singular too', () => {
    expect(detailOf(z.object({ xs: z.array(z.number()).max(1) }), { xs: [1, 2] })).toEqual([
      { type: 'too_long', loc: ['body', 'xs'], msg: 'List should have at most 1 item', input: [1, 2], ctx: { max_length: 1 } },
    ]);
  });
});
