import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpError } from './http-error.js';
import { type FormLimits, formatBytes, parseFormBody } from './parse-form.js';

/** Runs `parseFormBody` on a real request over loopback and returns what it produced. */
let server: http.Server | undefined;
afterEach(async () => {
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

async function parse(limits: FormLimits, init: { headers?: Record<string, string>; body?: string | FormData }) {
  let outcome: unknown;
  server = http.createServer((req, res) => {
    parseFormBody(req, limits).then(
      (v) => {
        outcome = v;
        res.end('ok');
      },
      (err: unknown) => {
        outcome = err;
        res.setHeader('Connection', 'close');
        res.end('err');
      },
    );
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await (await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', ...init })).text();
  return outcome;
}

describe('parseFormBody', () => {
  it('reports no body when nothing was sent', async () => {
    expect(await parse({ maxBodyBytes: 100 }, {})).toEqual({ hasBody: false, values: {} });
  });

  it('reads urlencoded fields, the last value winning', async () => {
    const got = await parse({ maxBodyBytes: 100 }, { body: 'a=1&b=two&a=3', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(got).toEqual({ hasBody: true, values: { a: '3', b: 'two' } });
  });

  it('hashes files while streaming and ignores files in fields that take none', async () => {
    const body = new FormData();
    body.set('board', 'pico');
    body.set('firmware', new Blob([new TextEncoder().encode('abc')]), 'fw.elf');
    body.set('other', new Blob([new Uint8Array(10)]), 'x.bin');
    const got = (await parse({ maxBodyBytes: 10_000, maxFileBytes: 100, fileFields: ['firmware'] }, { body })) as { values: Record<string, unknown> };
    expect(got.values).toEqual({
      board: 'pico',
      firmware: {
        filename: 'fw.elf',
        mimeType: 'application/octet-stream',
        bytes: new TextEncoder().encode('abc'),
        sizeBytes: 3,
        sha256: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
      },
    });
  });

  it.each([
    [{ maxBodyBytes: 10_000, maxFieldBytes: 4 }, 'a=12345', 413, 'form field "a" is larger than the limit of 4 bytes (4 bytes)'],
    [{ maxBodyBytes: 5 }, 'a=12345', 413, 'the request body is larger than the limit of 5 bytes (5 bytes)'],
  ])('refuses over-limit bodies: %j', async (limits, body, status, detail) => {
    const got = await parse(limits, { body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(got).toBeInstanceOf(HttpError);
    expect(got).toMatchObject({ status, detail, headers: { Connection: 'close' } });
  });

  it('refuses a multipart type without a boundary with 400 and a JSON body with 415', async () => {
    expect(await parse({ maxBodyBytes: 100 }, { body: 'x', headers: { 'content-type': 'multipart/form-data' } })).toMatchObject({ status: 400 });
    expect(await parse({ maxBodyBytes: 100 }, { body: '{}', headers: { 'content-type': 'application/json' } })).toMatchObject({
      status: 415,
      detail: 'Unsupported Media Type: send the body as application/x-www-form-urlencoded or multipart/form-data, not application/json',
    });
  });
});

describe('parseFormBody on a multipart body that ends inside a part (issue 9: this ended the process)', () => {
  const multipart = { 'content-type': 'multipart/form-data; boundary=XyZ' };
  it.each([
    ['a file part in a field that takes files', 'firmware'],
    ['a file part in a field that takes none', 'label'],
  ])('inside %s: a 400, and the server keeps serving', async (_what, field) => {
    const body = `--XyZ\r\nContent-Disposition: form-data; name="${field}"; filename="a.txt"\r\n\r\nabc`;
    const got = await parse({ maxBodyBytes: 1000, maxFileBytes: 100, fileFields: ['firmware'] }, { body, headers: multipart });
    expect(got).toBeInstanceOf(HttpError);
    expect(got).toMatchObject({ status: 400, detail: 'There was an error parsing the body: Unexpected end of form' });
    // Served again on a new server: the process (this worker) is still here.
    expect(await parse({ maxBodyBytes: 100 }, { body: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).toEqual({ hasBody: true, values: { a: '1' } });
  });

  it('inside a text part: a 400', async () => {
    const got = await parse({ maxBodyBytes: 1000 }, { body: '--XyZ\r\nContent-Disposition: form-data; name="board"\r\n\r\npi', headers: multipart });
    expect(got).toMatchObject({ status: 400, detail: 'There was an error parsing the body: Unexpected end of form' });
  });
});

describe('parseFormBody: form text is UTF-8, US-ASCII or ISO-8859-1', () => {
  const part = (headers: string, value: Buffer) => Buffer.concat([Buffer.from(`--B\r\nContent-Disposition: form-data; name="board"\r\n${headers}\r\n`), value, Buffer.from('\r\n--B--\r\n')]);
  const multipart = { 'content-type': 'multipart/form-data; boundary=B' };
  // board=rp2040 and note=`note`, neither part declaring a charset.
  const twoParts = (note: Buffer) =>
    Buffer.concat([Buffer.from('--B\r\nContent-Disposition: form-data; name="board"\r\n\r\nrp2040\r\n--B\r\nContent-Disposition: form-data; name="note"\r\n\r\n'), note, Buffer.from('\r\n--B--\r\n')]);
  const body = (b: Buffer) => new Uint8Array(b) as unknown as string;

  it.each([
    ['multipart/form-data; boundary=B; charset=utf-16', part('', Buffer.from('rp2040'))],
    ['application/x-www-form-urlencoded; charset=UTF-16', Buffer.from('board=rp2040')],
    ['application/x-www-form-urlencoded; charset="x-unknown"', Buffer.from('board=rp2040')],
    // busboy decodes windows-1252 as Latin-1, which it is not (0x80-0x9f).
    ['application/x-www-form-urlencoded; charset=windows-1252', Buffer.from('board=rp2040')],
    // Two that disagree: busboy read the last, which the first had let through (the review of session 19).
    ['application/x-www-form-urlencoded; charset=utf-8; charset=windows-1252', Buffer.from('board=rp2040&note=caf%E9')],
    // Two the relay reads, but otherwise.
    ['application/x-www-form-urlencoded; charset=utf-8; charset=latin1', Buffer.from('board=rp2040&note=caf%E9')],
  ])('a form declared %s: 415 before reading, never fields read as other text', async (type, sent) => {
    const got = await parse({ maxBodyBytes: 1000 }, { body: body(sent), headers: { 'content-type': type } });
    expect(got).toBeInstanceOf(HttpError);
    expect(got).toMatchObject({ status: 415, detail: expect.stringMatching(/^Unsupported charset: form text must be UTF-8, US-ASCII or ISO-8859-1, not "(utf-16|x-unknown|windows-1252|utf-8, windows-1252|utf-8, latin1)"$/) });
  });

  it.each([
    ['application/x-www-form-urlencoded; charset=utf-8; charset=utf8', Buffer.from('board=rp2040&note=caf%C3%A9')],
    ['application/x-www-form-urlencoded; charset=UTF-8; charset=us-ascii', Buffer.from('board=rp2040&note=caf%C3%A9')],
    ['application/x-www-form-urlencoded; charset=latin1; charset=ISO-8859-1', Buffer.from('board=rp2040&note=caf%E9')],
    ['multipart/form-data; boundary=B; charset=iso8859-1; charset="latin1"', twoParts(Buffer.from('caf\xe9', 'latin1'))],
  ])('a form declared %s (two names read alike) is read as one charset, not refused', async (type, sent) => {
    const got = await parse({ maxBodyBytes: 1000 }, { body: body(sent), headers: { 'content-type': type } });
    expect(got).toEqual({ hasBody: true, values: { board: 'rp2040', note: 'café' } });
  });

  it.each([
    ['application/x-www-form-urlencoded; charset=us-ascii', Buffer.from('board=rp2040&note=caf%C3%A9')],
    ['application/x-www-form-urlencoded; charset=US-ASCII', Buffer.from('board=rp2040&note=caf%C3%A9')],
    // An alias busboy does not know (it would hand the fields on as undefined).
    ['application/x-www-form-urlencoded; charset=ANSI_X3.4-1968', Buffer.from('board=rp2040&note=caf%C3%A9')],
    ['multipart/form-data; boundary=B; charset=ascii', twoParts(Buffer.from('café'))],
    // The same charset twice is one charset.
    ['application/x-www-form-urlencoded; charset=us-ascii; charset=US-ASCII', Buffer.from('board=rp2040&note=caf%C3%A9')],
  ])('a form declared %s (US-ASCII, a subset of UTF-8) is read as UTF-8', async (type, sent) => {
    const got = await parse({ maxBodyBytes: 1000 }, { body: body(sent), headers: { 'content-type': type } });
    expect(got).toEqual({ hasBody: true, values: { board: 'rp2040', note: 'café' } });
  });

  it.each([
    // Apache HttpClient's UrlEncodedFormEntity sends this by default.
    ['application/x-www-form-urlencoded; charset=ISO-8859-1', Buffer.from('board=rp2040&note=caf%E9')],
    ['application/x-www-form-urlencoded; charset=latin1', Buffer.from('board=rp2040&note=caf\xe9', 'latin1')],
    // A multipart form's own charset busboy ignores: its parts declaring none are read in it all the same.
    ['multipart/form-data; boundary=B; charset="iso-8859-1"', twoParts(Buffer.from('caf\xe9', 'latin1'))],
  ])('a form declared %s is read as ISO-8859-1', async (type, sent) => {
    const got = await parse({ maxBodyBytes: 1000 }, { body: body(sent), headers: { 'content-type': type } });
    expect(got).toEqual({ hasBody: true, values: { board: 'rp2040', note: 'café' } });
  });

  it('a part declaring a charset the parser cannot decode (utf-16): 415 naming the field, not the field dropped', async () => {
    // busboy hands such a field on as undefined: the form read as if "board" had not been sent.
    const got = await parse({ maxBodyBytes: 1000 }, { body: body(part('Content-Type: text/plain; charset=utf-16\r\n', Buffer.from('rp2040', 'utf16le'))), headers: multipart });
    expect(got).toMatchObject({ status: 415, detail: 'Unsupported charset: form field "board" declares a charset the server cannot read; send form text as UTF-8' });
  });

  it('reads a part as its declared charset where the parser can (Latin-1, UTF-16LE), and UTF-8 declared in any spelling', async () => {
    const latin1 = await parse({ maxBodyBytes: 1000 }, { body: body(part('Content-Type: text/plain; charset=iso-8859-1\r\n', Buffer.from('caf\xe9', 'latin1'))), headers: multipart });
    expect(latin1).toEqual({ hasBody: true, values: { board: 'café' } });
    const utf16le = await parse({ maxBodyBytes: 1000 }, { body: body(part('Content-Type: text/plain; charset=utf-16le\r\n', Buffer.from('café', 'utf16le'))), headers: multipart });
    expect(utf16le).toEqual({ hasBody: true, values: { board: 'café' } });
    const declared = await parse({ maxBodyBytes: 1000 }, { body: 'board=caf%C3%A9', headers: { 'content-type': 'application/x-www-form-urlencoded; charset="UTF-8"' } });
    expect(declared).toEqual({ hasBody: true, values: { board: 'café' } });
  });
});

describe('formatBytes', () => {
  it('names MiB, KiB or bytes', () => {
    expect([formatBytes(4 * 1024 * 1024), formatBytes(65536), formatBytes(1000)]).toEqual(['4 MiB', '64 KiB', '1000 bytes']);
  });
});
