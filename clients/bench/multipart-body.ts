import { randomBytes } from 'node:crypto';

/** A file part of a form: its field, the file name the server sees, its bytes and media type. */
export interface FilePart {
  field: string;
  fileName: string;
  bytes: Uint8Array;
  type: string;
}

/**
 * A `multipart/form-data` body (RFC 7578) of text fields and one file, as the bytes to send and
 * the content type that names their boundary: the encoded fields and the file's part header, the
 * file's bytes, the closing boundary, in one buffer. What `FormData` sends, without the `Blob`
 * and the web stream it reads the form through on every call (decision 0800).
 */
export function multipartBody(fields: Readonly<Record<string, string>>, file: FilePart): { body: Uint8Array; contentType: string } {
  // Random, as browsers make it: a file's bytes cannot contain it by design, only by a chance of 2^-96.
  const boundary = `----hilbench${randomBytes(12).toString('hex')}`;
  let head = '';
  for (const [name, value] of Object.entries(fields)) {
    head += `--${boundary}\r\nContent-Disposition: form-data; name="${escapeQuoted(name)}"\r\n\r\n${value}\r\n`;
  }
  head += `--${boundary}\r\nContent-Disposition: form-data; name="${escapeQuoted(file.field)}"; filename="${escapeQuoted(file.fileName)}"\r\nContent-Type: ${file.type}\r\n\r\n`;
  const body = Buffer.concat([Buffer.from(head, 'utf8'), file.bytes, Buffer.from(`\r\n--${boundary}--\r\n`, 'latin1')]);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

/** A name or file name inside quotes, escaped as the HTML standard's form encoding does (" CR LF as %22 %0D %0A). */
function escapeQuoted(value: string): string {
  return value.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}
