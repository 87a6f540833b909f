import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { HttpError } from '../../http/http-error.js';
import { parseOr422 } from '../../http/http-error.js';
import { codePointText } from '../../../wire/relay/relay-schemas.js';

function issuesOf(schema: z.ZodType, input: unknown): unknown[] {
  try {
    parseOr422(schema, input, 'body');
  } catch (err) {
    expect(err).toBeInstanceOf(HttpError);
    expect((err as HttpError).status).toBe(422);
    return (err as HttpError).detail as unknown[];
  }
  throw new Error('expected a 422');
}

describe('zod issues as FastAPI 422 entries', () => {
  const schema = z.object({ name: z.string(), n: z.number().int().max(5).optional(), mode: z.enum(['a', 'b']).optional(), title: codePointText(3, { singleLine: true }).optional() }).strict();

  it('missing, wrong type, bounds, enum and extra keys use pydantic names, keys in wire order', () => {
    const issues = issuesOf(schema, { n: 9, mode: 'c', extra: 1 }) as Record<string, unknown>[];
    expect(issues).toEqual([
      { type: 'missing', loc: ['body', 'name'], msg: 'Field required', input: null },
      { type: 'less_than_equal', loc: ['body', 'n'], msg: 'Input should be less than or equal to 5', input: 9, ctx: { le: 5 } },
      { type: 'enum', loc: ['body', 'mode'], msg: 'Input should be "a" or "b"', input: 'c', ctx: { expected: '"a", "b"' } },
      { type: 'extra_forbidden', loc: ['body', 'extra'], msg: 'Extra inputs are not permitted', input: 1 },
    ]);
    for (const i of issues) expect(Object.keys(i).slice(0, 4)).toEqual(['type', 'loc', 'msg', 'input']);
    expect(issuesOf(schema, { name: 5 })).toEqual([{ type: 'string_type', loc: ['body', 'name'], msg: 'Input should be a valid string', input: 5 }]);
  });

  it('code-point limits count astral characters once and refuse line breaks', () => {
    expect(() => parseOr422(schema, { name: 'x', title: '😀😀😀' }, 'body')).not.toThrow();
    expect(issuesOf(schema, { name: 'x', title: 'abcd' })).toEqual([
      { type: 'string_too_long', loc: ['body', 'title'], msg: 'String should have at most 3 characters', input: 'abcd', ctx: { max_length: 3 } },
    ]);
    expect(issuesOf(schema, { name: 'x', title: 'a\nb' })).toEqual([{ type: 'value_error', loc: ['body', 'title'], msg: 'Value error, must not contain a line break', input: 'a\nb' }]);
  });
});
