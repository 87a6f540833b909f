import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fileField, numericTextField, parseNumericText, textField } from '../../wire/form-fields.js';
import { parseForm } from './form-schema.js';
import { HttpError } from './http-error.js';

const schema = z.object({
  name: textField({ minLength: 2, maxLength: 5, pattern: /^[a-z]+$/, description: 'name' }),
  count: numericTextField({ default: '1', gt: 0, lt: 10, description: 'count' }),
  file: fileField('file'),
});

function errorsOf(raw: Record<string, unknown>) {
  try {
    parseForm(schema, raw);
  } catch (err) {
    if (err instanceof HttpError) return err.detail;
    throw err;
  }
  throw new Error('expected a validation failure');
}

describe('parseNumericText', () => {
  it('reads what Python float() reads', () => {
    expect(parseNumericText('90')).toBe(90);
    expect(parseNumericText(' 0.5 ')).toBe(0.5);
    expect(parseNumericText('.5')).toBe(0.5);
    expect(parseNumericText('5.')).toBe(5);
    expect(parseNumericText('1e3')).toBe(1000);
    expect(parseNumericText('1_000')).toBe(1000);
    expect(parseNumericText('-inf')).toBe(-Infinity);
    expect(parseNumericText('NaN')).toBeNaN();
    for (const bad of ['', ' ', 'abc', '1,5', '0x10', '1__0', '_1', '1_', '1e', '--1', '.']) expect(parseNumericText(bad)).toBeUndefined();
  });

  it('round-trips every finite number JavaScript prints', () => {
    fc.assert(fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (x) => Object.is(parseNumericText(String(x)), x) || (x === 0 && parseNumericText(String(x)) === 0)));
  });
});

describe('parseForm', () => {
  it('applies defaults and treats empty strings as absent', () => {
    const file = { filename: 'f', mimeType: 'application/octet-stream', bytes: new Uint8Array(1), sizeBytes: 1, sha256: '' };
    expect(parseForm(schema, { name: 'abc', count: '', file })).toEqual({ name: 'abc', count: 1, file });
  });

  it('reports one error per field (the first failed constraint), in field order', () => {
    expect(errorsOf({ count: '10', name: 'ABCDEFG' })).toEqual([
      { type: 'string_too_long', loc: ['body', 'name'], msg: 'String should have at most 5 characters', input: 'ABCDEFG', ctx: { max_length: 5 } },
      { type: 'less_than', loc: ['body', 'count'], msg: 'Input should be less than 10', input: '10', ctx: { lt: 10 } },
      { type: 'missing', loc: ['body', 'file'], msg: 'Field required', input: null },
    ]);
  });

  it('words short strings, patterns and non-positive numbers as pydantic does', () => {
    expect(errorsOf({ name: 'a', count: '-1' }).slice(0, 2)).toEqual([
      { type: 'string_too_short', loc: ['body', 'name'], msg: 'String should have at least 2 characters', input: 'a', ctx: { min_length: 2 } },
      { type: 'greater_than', loc: ['body', 'count'], msg: 'Input should be greater than 0', input: '-1', ctx: { gt: 0 } },
    ]);
    expect(errorsOf({ name: 'AB' })[0]).toEqual({
      type: 'string_pattern_mismatch',
      loc: ['body', 'name'],
      msg: "String should match pattern '^[a-z]+$'",
      input: 'AB',
      ctx: { pattern: '^[a-z]+$' },
    });
  });

  it('refuses NaN and infinities as finite_number', () => {
    for (const input of ['nan', 'inf', '-Infinity']) {
      expect(errorsOf({ name: 'ab', count: input })[0]).toEqual({ type: 'finite_number', loc: ['body', 'count'], msg: 'Input should be a finite number', input });
    }
  });
});

describe('parseForm: an absent field whose default fails its bounds (bench audit 3)', () => {
  it('reports the default\'s real error, not "missing"', () => {
    const bad = z.object({
      board: textField({ description: 'required' }),
      idle_seconds: numericTextField({ default: '90', ge: 10, le: 5, description: 'bounds that refuse the default' }),
    });
    let thrown: unknown;
    try {
      parseForm(bad, { board: 'pico' });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toMatchObject({
      status: 422,
      detail: [{ type: 'less_than_equal', loc: ['body', 'idle_seconds'], msg: 'Input should be less than or equal to 5', input: 90, ctx: { le: 5 } }],
    });
    // A required field that is absent is still "missing".
    expect(() => parseForm(bad, {})).toThrow(/board: Field required/);
  });
});
