import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonDecodeError, jsonErrorPosition } from './json-decode-error.js';

/** What `JSON.parse` threw for `text`, or null when it parsed. */
function parseError(text: string): Error | null {
  try {
    JSON.parse(text);
    return null;
  } catch (error) {
    return error as Error;
  }
}

function detailOf(text: string): unknown {
  return jsonDecodeError(text, parseError(text)).detail;
}

/**
 * Checks `jsonErrorPosition` against V8's own word wherever V8 gives one: its position ("at
 * position N"), the end for "Unexpected end of JSON input", the named character for Node 20's
 * "Unexpected token 'x', ..." (which names no position), and the whole text when it parses.
 */
function agreesWithV8(text: string): boolean {
  const position = jsonErrorPosition(text);
  const error = parseError(text);
  if (error === null) return position === text.length;
  const at = /JSON at position (\d+)/.exec(error.message);
  if (at) return position === Number(at[1]);
  if (error.message === 'Unexpected end of JSON input') return position === text.length;
  const token = /^Unexpected token '(.+?)', /su.exec(error.message);
  if (token) return text[position] === token[1];
  // `"NaN" is not valid JSON`: V8 quotes the whole text; it fails somewhere inside it.
  return position < text.length;
}

describe('jsonDecodeError: FastAPI\'s json_invalid at the position of the error', () => {
  it.each([
    ['{"a": }', 6, "Unexpected token '}'"],
    ['{"a":1,}', 7, 'Expected double-quoted property name'],
    ['[1 2]', 3, "Expected ',' or ']' after array element"],
    ['{"a":1}x', 7, 'Unexpected non-whitespace character after JSON'],
    ['{"a":', 5, 'Unexpected end of JSON input'],
    ['tru', 3, 'Unexpected end of JSON input'],
    ['nope', 1, "Unexpected token 'o'"],
    ['NaN', 0, "Unexpected token 'N'"],
  ])('%j: loc ["body", %i], ctx.error %j', (text, position, reason) => {
    expect(detailOf(text)).toEqual([{ type: 'json_invalid', loc: ['body', position], msg: 'JSON decode error', input: {}, ctx: { error: reason } }]);
  });

  it('counts characters as Python does (code points), not UTF-16 code units', () => {
    // "😀" is two UTF-16 code units and one character: the second `}` is character 9 (code unit 10).
    expect(detailOf('{"😀": 1 }}')).toMatchObject([{ loc: ['body', 9] }]);
  });

  it('never quotes the body in its reason', () => {
    const secret = '{"password": "hunter2" oops}';
    expect(JSON.stringify(detailOf(secret))).not.toContain('hunter2');
  });

  it('walks text nested far deeper than the stack', () => {
    expect(jsonErrorPosition('['.repeat(200_000) + 'x')).toBe(200_000);
  });

  it('finds the position V8 reports, on mangled JSON and on JSON-ish noise', () => {
    const mangled = fc
      .tuple(fc.json(), fc.nat(), fc.constantFrom('delete', 'insert', 'cut'), fc.constantFrom(...'{}[]:,"\\ -+.0123eEtfnulx\u0001\u00e9'))
      .map(([text, at, how, char]) => {
        const i = at % (text.length + 1);
        return how === 'delete' ? text.slice(0, i) + text.slice(i + 1) : how === 'insert' ? text.slice(0, i) + char + text.slice(i) : text.slice(0, i);
      });
    const noise = fc.string({ unit: fc.constantFrom(...'{}[]:," \\-+.019eEtrufalsn\tu\u0001') , maxLength: 12 });
    fc.assert(fc.property(fc.oneof(mangled, noise), agreesWithV8), { seed: 20_26, numRuns: 3000 });
  });
});
