import { isUtf8 } from 'node:buffer';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import { NOT_UTF8_DETAIL } from './json-body.js';

/**
 * `express.json` for the plain case, at a fraction of its event-loop work (decision 0620): a body
 * declared `application/json` (or with `; charset=utf-8`), with a `Content-Length` of 1 to
 * `limitBytes` bytes and no `Content-Encoding`, is read and parsed here, as body-parser would
 * with `verify: refuseInvalidUtf8`: bytes that are not UTF-8 refused (`NOT_UTF8_ERROR_TYPE`), a byte-order mark dropped (iconv-lite's decoder drops it), any JSON value taken
 * (`strict: false`), a body that does not parse handed on as body-parser's `entity.parse.failed`
 * error with the text (what the error handlers read), a client gone mid-body as its
 * `request.aborted` 400. Anything else (another type or charset, a compressed or chunked body, an
 * empty one, one over the limit) goes to `general`, the parser with all of body-parser's rules, so
 * every answer stays the one `general` alone gives. What it saves per request: type-is and
 * content-type parsing the header twice, iconv-lite's decoder, raw-body's and body-parser's set-up
 * (the vote route's body reading was 12 % of its main-thread time, decision 0575).
 */
export function plainJsonBody(options: { limitBytes: number }, general: RequestHandler): RequestHandler {
  return (req, res, next) => {
    const length = plainJsonLength(req, options.limitBytes);
    if (length === null) {
      general(req, res, next);
      return;
    }
    req.body = undefined;
    readPlainJson(req, length, (error, body) => {
      if (error) {
        next(error);
        return;
      }
      req.body = body;
      next();
    });
  };
}

/** Requests whose body `plainJsonBody` parsed from text holding no `\u` escape (`parsedWithoutEscapes`). */
const withoutEscapedText = new WeakSet<IncomingMessage>();

/**
 * True when `plainJsonBody` parsed this request's body from text holding no `\u` escape: then no
 * string in it, keys included, holds U+0000 or a lone surrogate (JSON allows neither raw, and text
 * decoded from UTF-8 holds no lone surrogate), so a check for them has nothing to find (decision 0840:
 * walking a vote for them cost about what parsing it did). False means nothing: look.
 */
export function parsedWithoutEscapes(req: IncomingMessage): boolean {
  return withoutEscapedText.has(req);
}

/** JSON media types taken here; others (`application/*+json`, other parameters) go to the general parser. */
const PLAIN_JSON_TYPES = new Set(['application/json', 'application/json; charset=utf-8', 'application/json;charset=utf-8']);

/** The declared length when the request is the plain case (see `plainJsonBody`), else null. */
function plainJsonLength(req: IncomingMessage, limitBytes: number): number | null {
  const { headers } = req;
  const type = headers['content-type'];
  if (type === undefined || !PLAIN_JSON_TYPES.has(type.toLowerCase())) return null;
  if (headers['content-encoding'] !== undefined || headers['transfer-encoding'] !== undefined) return null;
  const declared = headers['content-length'];
  // Node's parser refuses a malformed Content-Length; a read already begun (or done), or a request
  // whose connection is gone (body-parser then skips it), is not ours.
  if (declared === undefined || !/^[0-9]+$/.test(declared) || req.readableEnded || req.readableFlowing !== null || req.destroyed) return null;
  const length = Number(declared);
  return length >= 1 && length <= limitBytes ? length : null;
}

/** Reads `length` bytes of `req` and parses them (see `plainJsonBody`). */
function readPlainJson(req: IncomingMessage, length: number, done: (error: Error | null, body?: unknown) => void): void {
  const chunks: Buffer[] = [];
  let received = 0;
  let settled = false;
  const finish = (error: Error | null, body?: unknown) => {
    if (settled) return;
    settled = true;
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('aborted', onAborted);
    req.off('close', onClose);
    req.off('error', onError);
    done(error, body);
  };
  const onData = (chunk: Buffer) => {
    received += chunk.length;
    chunks.push(chunk);
  };
  const onEnd = () => {
    // Node stops at the declared length; fewer bytes means the connection ended first.
    if (received !== length) {
      finish(aborted());
      return;
    }
    const bytes = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, received);
    if (!isUtf8(bytes)) {
      finish(notUtf8(bytes));
      return;
    }
    let text = bytes.toString('utf8');
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    // body-parser takes an empty body as `{}` (here: a body that was only a byte-order mark).
    if (text.length === 0) {
      finish(null, {});
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (error) {
      finish(Object.assign(error as Error, { status: 400, statusCode: 400, expose: true, type: 'entity.parse.failed', body: text }));
      return;
    }
    if (!text.includes('\\u')) withoutEscapedText.add(req);
    finish(null, body);
  };
  const onAborted = () => finish(aborted());
  const onClose = () => finish(aborted());
  const onError = (error: Error) => finish(Object.assign(error, { status: 400, statusCode: 400, expose: true }));
  req.on('data', onData);
  req.once('end', onEnd);
  req.once('aborted', onAborted);
  req.once('close', onClose);
  req.once('error', onError);
}

/**
 * body-parser's `verify` for JSON read as UTF-8 (the relay's `express.json`): bytes that are not
 * UTF-8 are refused with a `NOT_UTF8_ERROR_TYPE` error (RFC 8259 section 8.1: JSON text is UTF-8), not
 * decoded with U+FFFD in place of each bad sequence, which stored, signed or hashed other text
 * than the client sent (a claim's title, and so its id). Other charsets are body-parser's to decode.
 */
export function refuseInvalidUtf8(_req: IncomingMessage, _res: ServerResponse, bytes: Buffer, encoding: string): void {
  if (encoding.toLowerCase() === 'utf-8' && !isUtf8(bytes)) throw notUtf8(bytes);
}

/** The `type` of the error handed on for a JSON body that is not UTF-8 (body-parser keeps a `verify` error's type). */
export const NOT_UTF8_ERROR_TYPE = 'entity.not.utf8';

/** A 400 in body-parser's shape for a body that is not UTF-8, with its bytes as `body`: FastAPI's answer (`NOT_UTF8_DETAIL`). */
function notUtf8(bytes: Buffer): Error {
  return Object.assign(new Error(NOT_UTF8_DETAIL), { status: 400, statusCode: 400, expose: true, type: NOT_UTF8_ERROR_TYPE, body: bytes });
}

/** raw-body's error for a body that stopped before its length, as body-parser hands it on. */
function aborted(): Error {
  return Object.assign(new Error('request aborted'), { status: 400, statusCode: 400, expose: true, type: 'request.aborted', code: 'ECONNABORTED' });
}
