import busboy from 'busboy';
import { describe, expect, it } from 'vitest';
import { multipartBody } from './multipart-body.js';

/** The body as the service's parser (busboy, server/http/parse-form.ts) reads it. */
async function parsed(body: Uint8Array, contentType: string): Promise<{ fields: Record<string, string>; files: Record<string, { fileName: string; type: string; bytes: Buffer }> }> {
  const fields: Record<string, string> = {};
  const files: Record<string, { fileName: string; type: string; bytes: Buffer }> = {};
  const parser = busboy({ headers: { 'content-type': contentType } });
  parser.on('field', (name, value) => (fields[name] = value));
  parser.on('file', (name, stream, info) => {
    const parts: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => parts.push(chunk));
    stream.on('end', () => (files[name] = { fileName: info.filename ?? '', type: info.mimeType, bytes: Buffer.concat(parts) }));
  });
  const done = new Promise<void>((resolve, reject) => {
    parser.on('close', resolve);
    parser.on('error', reject);
  });
  parser.end(Buffer.from(body));
  await done;
  return { fields, files };
}

describe('multipartBody', () => {
  it('encodes text fields and one file as the service parses them, every byte of the file kept', async () => {
    // Bytes that look like framing: CR LF, dashes, a quote.
    const bytes = Uint8Array.from([0x7f, 0x45, 0x4c, 0x46, 0x0d, 0x0a, 0x2d, 0x2d, 0x22, 0x00, 0xff]);
    const { body, contentType } = multipartBody({ board: 'pico', uart_seconds: '0.5', session: 'sess_é' }, { field: 'firmware', fileName: 'hello.elf', bytes, type: 'application/octet-stream' });
    const form = await parsed(body, contentType);
    expect(form.fields).toEqual({ board: 'pico', uart_seconds: '0.5', session: 'sess_é' });
    expect(form.files.firmware).toEqual({ fileName: 'hello.elf', type: 'application/octet-stream', bytes: Buffer.from(bytes) });
  });

  it('escapes quotes and line breaks in a file name, as browsers do, so a name cannot end its header', async () => {
    const { body, contentType } = multipartBody({}, { field: 'firmware', fileName: 'a"b\r\nContent-Type: text-html.elf', bytes: new Uint8Array(1), type: 'application/octet-stream' });
    const form = await parsed(body, contentType);
    expect(form.files.firmware?.fileName).toBe('a%22b%0D%0AContent-Type: text-html.elf');
    expect(form.files.firmware?.type).toBe('application/octet-stream');
  });

  it('draws a new boundary for every body', () => {
    const part = { field: 'f', fileName: 'x', bytes: new Uint8Array(0), type: 'application/octet-stream' };
    expect(multipartBody({}, part).contentType).not.toBe(multipartBody({}, part).contentType);
  });
});
