import { HttpError } from './http-error.js';

/**
 * FastAPI's 422 for a JSON body that does not parse, for both services (the bench's `readJsonBody`,
 * the relay's body parser): `json_invalid` at `["body", <character position of the error>]`,
 * "JSON decode error", `input` `{}` and `ctx.error` the parser's reason, as FastAPI builds it from
 * Python's `JSONDecodeError` (`loc: ("body", e.pos)`, `ctx: {"error": e.msg}`). `text` is the body
 * as the parser read it (decoded, a byte-order mark dropped); `error` is what `JSON.parse` threw.
 */
export function jsonDecodeError(text: string, error: unknown): HttpError {
  const position = jsonErrorPosition(text);
  return new HttpError(422, [
    { type: 'json_invalid', loc: ['body', codePointsBefore(text, position)], msg: 'JSON decode error', input: {}, ctx: { error: jsonErrorReason(text, position, error) } },
  ]);
}

/**
 * Where `text` stops being JSON (RFC 8259), in UTF-16 code units: the length of its longest prefix
 * that some JSON text starts with, which is the position V8 reports (`... in JSON at position N`),
 * and the text's length when it ends too early ("Unexpected end of JSON input"). Node 20's
 * "Unexpected token 'x', "..." is not valid JSON" names no position at all, so it is found here,
 * by walking the text, not from the message's wording (which differs between V8 versions). Without
 * recursion: a body may nest far deeper than the stack. `text.length` also for text that parses.
 */
export function jsonErrorPosition(text: string): number {
  const containers: ('[' | '{')[] = [];
  let i = skipSpace(text, 0);
  // What the walk expects next: a value, a property name (or `}` right after `{`), or what follows a value.
  let expect: 'value' | 'first-value' | 'key' | 'first-key' | 'after-value' = 'value';
  while (i < text.length) {
    const c = text[i]!;
    if (expect === 'after-value') {
      const top = containers.at(-1);
      if (top === undefined) return i;
      if (c === ',') expect = top === '[' ? 'value' : 'key';
      else if ((c === ']' && top === '[') || (c === '}' && top === '{')) {
        containers.pop();
        expect = 'after-value';
      } else return i;
      i = skipSpace(text, i + 1);
      continue;
    }
    if (expect === 'key' || expect === 'first-key') {
      if (c === '}' && expect === 'first-key') {
        containers.pop();
        expect = 'after-value';
        i = skipSpace(text, i + 1);
        continue;
      }
      if (c !== '"') return i;
      i = skipString(text, i);
      if (i < 0) return -i - 1;
      i = skipSpace(text, i);
      if (i >= text.length) return i;
      if (text[i] !== ':') return i;
      expect = 'value';
      i = skipSpace(text, i + 1);
      continue;
    }
    // A value (or, right after `[`, the `]` that closes an empty array).
    if (c === ']' && expect === 'first-value') {
      containers.pop();
      expect = 'after-value';
      i = skipSpace(text, i + 1);
      continue;
    }
    if (c === '[' || c === '{') {
      containers.push(c);
      expect = c === '[' ? 'first-value' : 'first-key';
      i = skipSpace(text, i + 1);
      continue;
    }
    const end = c === '"' ? skipString(text, i) : c === '-' || (c >= '0' && c <= '9') ? skipNumber(text, i) : skipLiteral(text, i);
    if (end < 0) return -end - 1;
    expect = 'after-value';
    i = skipSpace(text, end);
  }
  return text.length;
}

/** JSON's whitespace (RFC 8259 section 2: space, tab, line feed, carriage return), not JavaScript's. */
function skipSpace(text: string, from: number): number {
  let i = from;
  while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  return i;
}

// The skip* functions return the index after what they read, or -(position of the error) - 1.

function skipString(text: string, from: number): number {
  let i = from + 1;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    if (code === 0x22) return i + 1;
    if (code < 0x20) return -i - 1;
    if (code === 0x5c) {
      const escaped = text[i + 1];
      if (escaped === undefined) return -(i + 1) - 1;
      if (escaped === 'u') {
        for (let k = i + 2; k < i + 6; k++) {
          if (k >= text.length) return -k - 1;
          if (!/[0-9a-fA-F]/.test(text[k]!)) return -k - 1;
        }
        i += 6;
        continue;
      }
      if (!'"\\/bfnrt'.includes(escaped)) return -(i + 1) - 1;
      i += 2;
      continue;
    }
    i++;
  }
  return -text.length - 1;
}

function skipNumber(text: string, from: number): number {
  let i = from;
  if (text[i] === '-') i++;
  const digits = () => {
    const start = i;
    while (i < text.length && text[i]! >= '0' && text[i]! <= '9') i++;
    return i > start;
  };
  if (text[i] === '0') i++;
  else if (!digits()) return -i - 1;
  if (text[i] === '.') {
    i++;
    if (!digits()) return -i - 1;
  }
  if (text[i] === 'e' || text[i] === 'E') {
    i++;
    if (text[i] === '+' || text[i] === '-') i++;
    if (!digits()) return -i - 1;
  }
  return i;
}

function skipLiteral(text: string, from: number): number {
  const literal = ['true', 'false', 'null'].find((word) => word[0] === text[from]);
  if (literal === undefined) return -from - 1;
  for (let k = 1; k < literal.length; k++) {
    if (from + k >= text.length) return -(from + k) - 1;
    if (text[from + k] !== literal[k]) return -(from + k) - 1;
  }
  return from + literal.length;
}

/** Python counts a string's positions in code points, JavaScript in UTF-16 code units. */
function codePointsBefore(text: string, position: number): number {
  let count = 0;
  for (let i = 0; i < position; i++) {
    const code = text.charCodeAt(i);
    // The second half of a surrogate pair adds no code point of its own.
    if (code >= 0xdc00 && code <= 0xdfff && i > 0 && text.charCodeAt(i - 1) >= 0xd800 && text.charCodeAt(i - 1) <= 0xdbff) continue;
    count++;
  }
  return count;
}

/**
 * The parser's reason without its position (that is `loc`'s) or its quote of the body (an echo the
 * answer need not carry): "Expected ',' or '}' after property value", "Unexpected token '}'",
 * "Unexpected end of JSON input"; worded from the position for a message of another shape.
 */
function jsonErrorReason(text: string, position: number, error: unknown): string {
  const message = error instanceof Error ? error.message : '';
  const positioned = /^(.+?)(?: in JSON)? at position \d+/.exec(message);
  if (positioned) return positioned[1]!;
  const token = /^(Unexpected token '.{1,2}'), /su.exec(message);
  if (token) return token[1]!;
  if (message === 'Unexpected end of JSON input' || position >= text.length) return 'Unexpected end of JSON input';
  return `Unexpected token '${String.fromCodePoint(text.codePointAt(position)!)}'`;
}
