import busboy from 'busboy';
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { HttpError } from './http-error.js';
import { type UploadedFile, contentTypeWithoutCharset, formCharsetOf } from '../../wire/form-fields.js';

/**
 * Reads an `application/x-www-form-urlencoded` or `multipart/form-data` body as a stream
 * (busboy), with every size bounded while reading: nothing larger than a limit is ever held in
 * memory or written anywhere. Files are hashed (SHA-256) as their bytes arrive.
 *
 * Over a limit: a 413 naming the limit, with `Connection: close`; the rest of the upload is
 * read and discarded (not buffered) until the connection closes, so the client sees the answer
 * instead of a reset.
 */
export interface FormLimits {
  /** Largest whole body, in bytes (fields, files and multipart framing together). */
  maxBodyBytes: number;
  /** Largest single file, in bytes; only fields named in `fileFields` may carry files. */
  maxFileBytes?: number;
  /** Largest single text value, in bytes. Default 16 KiB. */
  maxFieldBytes?: number;
  fileFields?: readonly string[];
}

export interface ParsedForm {
  /** False when the request had no body at all (no content type, nothing sent). */
  hasBody: boolean;
  /** Text values by name (the last one wins, as in FastAPI) and files by field name. */
  values: Record<string, string | UploadedFile>;
}

const FORM_TYPES = ['application/x-www-form-urlencoded', 'multipart/form-data'];
const MAX_FILES = 8;

/** A human size: "4 MiB", "64 KiB" or bytes. */
export function formatBytes(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

function tooLarge(what: string, limitBytes: number): HttpError {
  return new HttpError(413, `${what} is larger than the limit of ${limitBytes} bytes (${formatBytes(limitBytes)})`, { Connection: 'close' });
}

/** The 400 for a body that is not well-formed (or ends early), in Starlette's words. */
function malformed(err: Error): HttpError {
  return new HttpError(400, `There was an error parsing the body: ${err.message}`);
}

/**
 * What `parseFormBody` answers from the headers alone, before reading: the 415 for a body that is
 * not a form, else the 413 for a `Content-Length` over `maxBodyBytes`; undefined otherwise (and for
 * no body at all). Used before `100 Continue` too, so a request gets the same status with or
 * without `Expect` (a big text/plain body got 413 with it, 415 without).
 */
export function formRefusedFromHeaders(req: IncomingMessage, maxBodyBytes: number): HttpError | undefined {
  if (!hasBody(req)) return undefined;
  const contentType = req.headers['content-type'];
  const mediaType = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (!FORM_TYPES.includes(mediaType)) {
    return new HttpError(415, `Unsupported Media Type: send the body as ${FORM_TYPES.join(' or ')}${contentType ? `, not ${mediaType || contentType}` : ''}`);
  }
  const charset = formCharsetOf(contentType);
  if ('refused' in charset) return new HttpError(415, `Unsupported charset: form text must be UTF-8, US-ASCII or ISO-8859-1, not ${JSON.stringify(charset.refused)}`);
  const declaredLength = req.headers['content-length'];
  if (declaredLength !== undefined && Number(declaredLength) > maxBodyBytes) return tooLarge('the request body', maxBodyBytes);
  return undefined;
}

/** A request without a content type, length or chunks is a form with no fields. */
function hasBody(req: IncomingMessage): boolean {
  const declaredLength = req.headers['content-length'];
  return req.headers['content-type'] !== undefined || req.headers['transfer-encoding'] !== undefined || (declaredLength !== undefined && declaredLength !== '0');
}

/**
 * Parses the request body as a form. Throws `HttpError` 413 / 415 / 400; 415 also for a form
 * declaring a charset other than UTF-8, US-ASCII or ISO-8859-1 (`formCharsetOf`), or a part
 * declaring one busboy cannot decode (Latin-1 and UTF-16LE parts it reads as declared).
 */
export function parseFormBody(req: IncomingMessage, limits: FormLimits): Promise<ParsedForm> {
  if (!hasBody(req)) return Promise.resolve({ hasBody: false, values: {} });
  const refused = formRefusedFromHeaders(req, limits.maxBodyBytes);
  if (refused) {
    // Refused from the headers alone: not one byte of the body is read into memory.
    req.resume();
    return Promise.reject(refused);
  }

  const fileFields = new Set(limits.fileFields ?? []);
  const maxFileBytes = limits.maxFileBytes ?? 0;
  const maxFieldBytes = limits.maxFieldBytes ?? 16 * 1024;

  return new Promise<ParsedForm>((resolve, reject) => {
    const values: Record<string, string | UploadedFile> = {};
    let settled = false;
    let bodyBytes = 0;
    let pendingFiles = 0;
    let finished = false;

    let parser: busboy.Busboy;
    try {
      const contentType = req.headers['content-type'] ?? '';
      const charset = formCharsetOf(contentType);
      parser = busboy({
        // The form's charset read as formCharsetOf says (busboy ignores a multipart form's own, and
        // knows no alias of US-ASCII), parts declaring none read in it.
        headers: { ...req.headers, 'content-type': contentTypeWithoutCharset(contentType) },
        defCharset: 'read' in charset ? charset.read : 'utf8',
        // Files in other fields are read past and dropped (as FastAPI ignores unknown fields),
        // but their number is bounded too.
        limits: { fileSize: maxFileBytes, fieldSize: maxFieldBytes, fields: 64, files: MAX_FILES, parts: 128 },
      });
    } catch (err) {
      req.resume();
      reject(malformed(err as Error));
      return;
    }

    const fail = (error: HttpError) => {
      if (settled) return;
      settled = true;
      req.unpipe(parser);
      req.off('data', countBytes);
      // Keep reading and dropping what is still coming, so the 413 can be delivered.
      req.resume();
      reject(error);
    };
    const maybeDone = () => {
      if (!settled && finished && pendingFiles === 0) {
        settled = true;
        resolve({ hasBody: true, values });
      }
    };
    const countBytes = (chunk: Buffer) => {
      bodyBytes += chunk.length;
      if (bodyBytes > limits.maxBodyBytes) fail(tooLarge('the request body', limits.maxBodyBytes));
    };
    req.on('data', countBytes);

    parser.on('field', (name, value: string | undefined, info) => {
      // A part in a charset busboy cannot decode (formCharsetOf says why) comes as undefined.
      if (value === undefined) {
        fail(new HttpError(415, `Unsupported charset: form field ${JSON.stringify(name)} declares a charset the server cannot read; send form text as UTF-8`));
        return;
      }
      if (info.valueTruncated) {
        fail(tooLarge(`form field "${name}"`, maxFieldBytes));
        return;
      }
      values[name] = value;
    });
    parser.on('file', (name, stream, info) => {
      // busboy destroys the part being read with its error when the body ends inside it ("Unexpected
      // end of form"); an 'error' nobody listens to is thrown and ends the whole process (issue 9).
      // The parser reports the same error too; either way the answer is the 400 below.
      stream.on('error', (err: Error) => fail(malformed(err)));
      if (!fileFields.has(name)) {
        // A file where text belongs, or an unknown field: read past it, keep nothing.
        stream.resume();
        return;
      }
      pendingFiles++;
      const hash = createHash('sha256');
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        if (settled) return;
        size += chunk.length;
        hash.update(chunk);
        chunks.push(chunk);
      });
      stream.on('limit', () => {
        chunks.length = 0;
        fail(tooLarge(`the file in field "${name}"`, maxFileBytes));
      });
      stream.on('end', () => {
        pendingFiles--;
        if (settled) return;
        const bytes = new Uint8Array(Buffer.concat(chunks, size));
        // A file part with no name and no bytes is what a browser sends for "no file chosen".
        if (!(info.filename === undefined || info.filename === '') || size > 0) {
          values[name] = { filename: info.filename ?? '', mimeType: info.mimeType, bytes, sizeBytes: size, sha256: hash.digest('hex') };
        }
        maybeDone();
      });
    });
    parser.on('fieldsLimit', () => fail(new HttpError(413, 'too many form fields (at most 64)', { Connection: 'close' })));
    parser.on('partsLimit', () => fail(new HttpError(413, 'too many multipart parts (at most 128)', { Connection: 'close' })));
    parser.on('filesLimit', () => fail(new HttpError(413, `too many files (at most ${MAX_FILES})`, { Connection: 'close' })));
    parser.on('error', (err: Error) => fail(malformed(err)));
    parser.on('close', () => {
      finished = true;
      maybeDone();
    });
    req.on('aborted', () => fail(new HttpError(400, 'the client closed the connection before the body was complete')));
    // A request stream emits 'error' only to listeners; with one, a broken connection is a 400 here
    // (never delivered, the socket is gone) instead of a promise left pending.
    req.on('error', () => fail(new HttpError(400, 'the client closed the connection before the body was complete')));
    req.pipe(parser);
  });
}
