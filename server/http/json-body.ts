import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import { HttpError } from './http-error.js';
import { jsonDecodeError } from './json-decode-error.js';

/**
 * Reads a JSON request body of at most `maxBodyBytes`: 415 unless it is declared JSON, 413 over the
 * limit (from `Content-Length` before reading, or while reading), 400 when the client stops sending
 * mid-body, a FastAPI-style 422 `json_invalid` at the error's position when it does not parse (`jsonDecodeError`), and FastAPI's 400
 * `NOT_UTF8_DETAIL` when its bytes are not UTF-8 (RFC 8259 section 8.1: JSON text is UTF-8; decoded
 * with U+FFFD, serial input's text sent other bytes to the firmware than the client's). Never throws
 * anything but `HttpError` for what the client sent.
 */
export async function readJsonBody(req: IncomingMessage, options: { maxBodyBytes: number }): Promise<unknown> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') throw notJson(type);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > options.maxBodyBytes) throw tooLarge(options.maxBodyBytes);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > options.maxBodyBytes) throw tooLarge(options.maxBodyBytes);
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    if (err instanceof HttpError) throw err;
    throw new HttpError(400, 'the request body ended before it was complete');
  }
  const bytes = Buffer.concat(chunks);
  if (!isUtf8(bytes)) throw new HttpError(400, NOT_UTF8_DETAIL);
  // A UTF-8 byte-order mark is read past, as Python's json.loads (FastAPI) and the relay's parser
  // do (RFC 8259 section 8.1 lets a parser ignore one); JSON.parse alone would call it invalid.
  const text = withoutByteOrderMark(bytes.toString('utf8'));
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw jsonDecodeError(text, err);
  }
}

/**
 * FastAPI's answer to a JSON body that is not UTF-8, with status 400: Starlette's `json.loads` of
 * the bytes raises `UnicodeDecodeError`, not the `JSONDecodeError` FastAPI turns into a 422
 * `json_invalid`, and FastAPI's catch-all for a body it cannot read answers this.
 */
export const NOT_UTF8_DETAIL = 'There was an error parsing the body';

/** The 415 both services answer for a body that is not declared JSON where JSON is read. */
export function notJson(mediaType: string): HttpError {
  return new HttpError(415, `Unsupported media type: the body must be JSON (content-type: application/json), not ${mediaType || 'none'}`);
}

function withoutByteOrderMark(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

function tooLarge(maxBodyBytes: number): HttpError {
  return new HttpError(413, `Request body too large: at most ${maxBodyBytes} bytes`);
}
