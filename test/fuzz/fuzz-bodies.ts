import fc from 'fast-check';
import type { RawRequest } from './raw-http.js';

/**
 * Hostile request bodies, each a complete description of what goes on the wire after the request
 * line: headers (content type, length, encodings) and bytes, and how the client ends. The fixed
 * catalog (`bodyCases`) holds every shape the audit of issue 9 named; `arbitraryBody` draws random
 * variations of them for fast-check.
 */
export interface FuzzBody {
  name: string;
  headers: Record<string, string | number>;
  body: Buffer;
  ending: NonNullable<RawRequest['ending']>;
  /**
   * The framing lies (bytes after the declared length, broken chunks): node's parser fails on the
   * connection after the request, so the answer may be the request's own or the parser's 400.
   */
  lies?: boolean;
}

const BOUNDARY = 'XyZfuzz';

/** A body with an exact `Content-Length` (the default framing). */
function sized(name: string, contentType: string | undefined, body: Buffer | string, extra: Record<string, string> = {}): FuzzBody {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  return { name, headers: { ...(contentType ? { 'Content-Type': contentType } : {}), 'Content-Length': bytes.length, ...extra }, body: bytes, ending: 'complete' };
}

function part(name: string, value: string, filename?: string): string {
  const disposition = `form-data; name="${name}"${filename !== undefined ? `; filename="${filename}"` : ''}`;
  return `--${BOUNDARY}\r\nContent-Disposition: ${disposition}\r\n${filename !== undefined ? 'Content-Type: application/octet-stream\r\n' : ''}\r\n${value}\r\n`;
}

const multipartType = `multipart/form-data; boundary=${BOUNDARY}`;

/** A well-formed multipart body with a text part per field and a file part named `fileField`. */
function multipart(fields: readonly string[], fileField: string, fileBytes: string): string {
  return fields.map((f) => part(f, 'x')).join('') + part(fileField, fileBytes, 'a.bin') + `--${BOUNDARY}--\r\n`;
}

/** `depth` objects nested in one another, as text (building it as a value would overflow JSON.stringify). */
export function nestedJson(depth: number): string {
  return '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

/**
 * The fixed catalog for a route whose body fields are `fields` (JSON properties or form fields):
 * bodies that are truncated, malformed, deeply nested, of every content type, with lying or
 * missing framing.
 */
export function bodyCases(fields: readonly string[]): FuzzBody[] {
  const names = fields.length > 0 ? [...fields] : ['file'];
  const fileField = names.includes('firmware') ? 'firmware' : names.includes('file') ? 'file' : names[0]!;
  const full = multipart(names.filter((n) => n !== fileField), fileField, '\x7fELF\x01\x01\x01garbage');
  const intoFile = full.slice(0, full.indexOf('\x7fELF') + 6);
  const chunkedHeaders = { 'Content-Type': multipartType, 'Transfer-Encoding': 'chunked' };
  return [
    sized('no body', undefined, ''),
    sized('json: nested 4500 deep', 'application/json', nestedJson(4500)),
    sized('json: arrays nested 5000 deep', 'application/json', '['.repeat(5000) + ']'.repeat(5000)),
    sized('json: nested 60 deep in every field', 'application/json', JSON.stringify(Object.fromEntries(names.map((n) => [n, 0]))).replaceAll('0', nestedJson(60))),
    sized('json: slice-like nested 1000 deep', 'application/json', '{"i":['.repeat(1000) + '{"v":[]}' + ']}'.repeat(1000)),
    sized('json: truncated', 'application/json', '{"a": [1, 2'),
    sized('json: not JSON', 'application/json', '{bad'),
    sized('json: empty', 'application/json', ''),
    sized('json: top-level string', 'application/json', '"x"'),
    sized('json: prototype keys', 'application/json', '{"__proto__": {"polluted": 1}, "constructor": {"prototype": {"polluted": 1}}}'),
    sized('json: 1000 keys', 'application/json', JSON.stringify(Object.fromEntries(Array.from({ length: 1000 }, (_, k) => [`k${k}`, k])))),
    sized('json: 300 KB string', 'application/json', JSON.stringify({ [names[0]!]: 'x'.repeat(300_000) })),
    sized('json: utf-16 charset', 'application/json; charset=utf-16', '{}'),
    sized('json: gzip that is not gzip', 'application/json', 'not gzip at all', { 'Content-Encoding': 'gzip' }),
    sized('json: unknown encoding', 'application/json', '{}', { 'Content-Encoding': 'x-fuzz' }),
    sized('multipart: well formed', multipartType, full),
    sized('multipart: ends inside the file part', multipartType, intoFile),
    sized('multipart: ends inside a file part named "label"', multipartType, `--${BOUNDARY}\r\nContent-Disposition: form-data; name="label"; filename="a.txt"\r\n\r\nabc`),
    sized('multipart: ends inside a text part', multipartType, `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${names[0]}"\r\n\r\nabc`),
    sized('multipart: no closing boundary', multipartType, full.slice(0, full.lastIndexOf(`--${BOUNDARY}--`))),
    sized('multipart: ends inside a part header', multipartType, `--${BOUNDARY}\r\nContent-Disposition: form-da`),
    sized('multipart: no boundary parameter', 'multipart/form-data', full),
    sized('multipart: garbage', multipartType, 'x'),
    sized('multipart: 300 parts', multipartType, Array.from({ length: 300 }, (_, k) => part(`f${k}`, 'v')).join('') + `--${BOUNDARY}--\r\n`),
    sized('multipart: 20 files', multipartType, Array.from({ length: 20 }, () => part(fileField, 'abc', 'a.bin')).join('') + `--${BOUNDARY}--\r\n`),
    sized('urlencoded: fields', 'application/x-www-form-urlencoded', names.map((n) => `${n}=x`).join('&')),
    sized('urlencoded: bracket keys 1000 deep', 'application/x-www-form-urlencoded', `a${'[b]'.repeat(1000)}=1`),
    sized('urlencoded: bad percent-encoding', 'application/x-www-form-urlencoded', `${names[0]}=%ZZ%&%=%`),
    sized('urlencoded: 5000 pairs', 'application/x-www-form-urlencoded', Array.from({ length: 5000 }, (_, k) => `k${k}=${k}`).join('&')),
    sized('text/plain', 'text/plain', 'hello'),
    sized('octet-stream', 'application/octet-stream', Buffer.from([0, 1, 2, 0xff, 0xfe, 0x7f])),
    sized('wrong content type', 'image/png', '\x89PNG'),
    sized('content type without a type', ';;;=', 'x'),
    sized('no content type with a body', undefined, '{"a":1}'),
    // Framing that lies or stops: what only a raw socket can send.
    { name: 'Content-Length shorter than the body', headers: { 'Content-Type': multipartType, 'Content-Length': Math.max(0, Buffer.byteLength(full) - 12) }, body: Buffer.from(full), ending: 'complete', lies: true },
    { name: 'Content-Length longer than the body, then hang up', headers: { 'Content-Type': multipartType, 'Content-Length': Buffer.byteLength(full) + 100 }, body: Buffer.from(full), ending: 'hang-up' },
    { name: 'chunked that ends early', headers: chunkedHeaders, body: Buffer.from(`${Buffer.byteLength(intoFile).toString(16)}\r\n${intoFile}\r\n`), ending: 'hang-up' },
    { name: 'chunked with a bad chunk size', headers: chunkedHeaders, body: Buffer.from('zz\r\nabc\r\n0\r\n\r\n'), ending: 'complete', lies: true },
    { name: 'chunked, truncated form, properly ended', headers: chunkedHeaders, body: Buffer.from(`${Buffer.byteLength(intoFile).toString(16)}\r\n${intoFile}\r\n0\r\n\r\n`), ending: 'complete' },
    { name: 'Content-Length and chunked', headers: { ...chunkedHeaders, 'Content-Length': 3 }, body: Buffer.from('3\r\nabc\r\n0\r\n\r\n'), ending: 'complete', lies: true },
    { name: 'two different Content-Lengths', headers: { 'Content-Type': 'application/json', 'Content-Length': '2\r\nContent-Length: 3' }, body: Buffer.from('{}'), ending: 'complete', lies: true },
    { name: '100-continue, truncated multipart', headers: { 'Content-Type': multipartType, 'Content-Length': Buffer.byteLength(intoFile), Expect: '100-continue' }, body: Buffer.from(intoFile), ending: 'expect-continue' },
    { name: '100-continue, nested JSON', headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(nestedJson(4500)), Expect: '100-continue' }, body: Buffer.from(nestedJson(4500)), ending: 'expect-continue' },
  ];
}

const contentTypes = [
  'application/json',
  multipartType,
  'application/x-www-form-urlencoded',
  'text/plain',
  'application/octet-stream',
  'application/json; charset=latin1',
  'multipart/form-data',
  undefined,
];

/** Random JSON text, sometimes with a deeply nested value spliced in, sometimes cut short. */
const jsonText = fc
  .tuple(fc.jsonValue({ maxDepth: 4 }), fc.nat({ max: 3000 }), fc.option(fc.nat({ max: 200 }), { nil: undefined }))
  .map(([value, depth, cut]) => {
    const text = JSON.stringify(value) ?? 'null';
    const spliced = depth > 100 ? `{"x":${nestedJson(depth)},"y":${text}}` : text;
    return cut === undefined ? spliced : spliced.slice(0, cut);
  });

/** A multipart body built from random parts, cut at a random point. */
function multipartText(fields: readonly string[]) {
  return fc
    .tuple(
      fc.array(fc.tuple(fc.constantFrom(...fields, 'file', 'firmware', 'label', 'x'), fc.string({ maxLength: 40 }), fc.boolean()), { maxLength: 5 }),
      fc.boolean(),
      fc.nat({ max: 400 }),
    )
    .map(([parts, closed, cut]) => {
      const text = parts.map(([name, value, isFile]) => part(name, value, isFile ? 'f.bin' : undefined)).join('') + (closed ? `--${BOUNDARY}--\r\n` : '');
      return cut < text.length ? text.slice(0, cut) : text;
    });
}

/** A random hostile body for a route with body fields `fields`. */
export function arbitraryBody(fields: readonly string[]): fc.Arbitrary<FuzzBody> {
  const names = fields.length > 0 ? fields : ['x'];
  const text = fc.oneof(jsonText, multipartText(names), fc.string({ maxLength: 200 }), fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('latin1')));
  return fc
    .tuple(fc.constantFrom(...contentTypes), text, fc.constantFrom<'exact' | 'short' | 'long' | 'chunked-early' | 'continue'>('exact', 'exact', 'exact', 'short', 'long', 'chunked-early', 'continue'))
    .map(([contentType, body, framing]): FuzzBody => {
      const bytes = Buffer.from(body, 'latin1');
      const typeHeader: Record<string, string> = contentType ? { 'Content-Type': contentType } : {};
      const name = `random ${framing} ${contentType ?? '(none)'}: ${JSON.stringify(body.slice(0, 80))}`;
      switch (framing) {
        case 'short':
          return { name, headers: { ...typeHeader, 'Content-Length': Math.floor(bytes.length / 2) }, body: bytes, ending: 'complete', lies: true };
        case 'long':
          return { name, headers: { ...typeHeader, 'Content-Length': bytes.length + 7 }, body: bytes, ending: 'hang-up' };
        case 'chunked-early':
          return { name, headers: { ...typeHeader, 'Transfer-Encoding': 'chunked' }, body: Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n')]), ending: 'hang-up' };
        case 'continue':
          return { name, headers: { ...typeHeader, 'Content-Length': bytes.length, Expect: '100-continue' }, body: bytes, ending: 'expect-continue' };
        default:
          return { name, headers: { ...typeHeader, 'Content-Length': bytes.length }, body: bytes, ending: 'complete' };
      }
    });
}
