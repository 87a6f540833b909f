import express, { type RequestHandler } from 'express';
import { plainJsonBody, refuseInvalidUtf8 } from '../../http/plain-json-body.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';

/**
 * The relay's body parser, run after a route's guard: multipart uploads are left to the handler,
 * which streams them; JSON is parsed, bounded, for everything else, a plain JSON body (every vote)
 * without body-parser's set-up (decision 0620).
 */
export function relayBodyParser(): RequestHandler {
  // strict: false parses any JSON value, as FastAPI does: a body of `"x"` or `1` is well-formed JSON
  // that is no object (a 422 model_attributes_type from the route's schema), not a decode error.
  // refuseInvalidUtf8: bytes that are not UTF-8 are FastAPI's 400, never text with U+FFFD stored as if sent.
  const json = express.json({ limit: relayLimits.jsonBodyMaxBytes, type: ['application/json', 'application/*+json'], strict: false, verify: refuseInvalidUtf8 });
  return plainJsonBody({ limitBytes: relayLimits.jsonBodyMaxBytes }, (req, res, next) => (req.is('multipart/form-data') ? next() : json(req, res, next)));
}
