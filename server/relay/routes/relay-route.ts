import type { IncomingMessage } from 'node:http';
import type { Request, Response } from 'express';
import type { z } from 'zod';
import type { ApiRoute, RouteGuard } from '../../http/api-route.js';
import type { OpenApiSecurity } from '../../http/openapi.js';
import { HttpError } from '../../http/http-error.js';
import { notJson } from '../../http/json-body.js';
import { parsedWithoutEscapes } from '../../http/plain-json-body.js';
import { lastQueryValues } from '../../http/query-values.js';
import { parseOr422 } from '../../http/http-error.js';
import { type Caller, type Credentials, type KnownCaller, requireCredential } from '../domain/credentials.js';
import { declaredUploadTooLarge } from '../domain/file-store.js';
import { httpErrorOfRelay, relayToHttpError } from './relay-error-http.js';
import { refuseUnstorableText } from '../domain/storable-text.js';
import { type CredentialKind, credentialFormats, credentialMeaning, relayLimits } from '../../../wire/relay/relay-facts.js';
import { bodyErrors, genericErrors, pathErrors, routeErrors, routeOtherSuccess } from './route-statuses.js';

export { inMatchOrder } from './route-match-order.js';

/**
 * A relay endpoint: the HTTP toolkit's one route type, with the relay's credential names and the
 * spec's "Available in" version always given. The same list drives routing, /openapi.json and the
 * docs tables.
 */
export type RelayRoute = ApiRoute<Caller, CredentialKind> & { auth: CredentialKind; since: '0.9.3' | '0.9.19' };

export interface RouteInput<B = unknown, Q = unknown> {
  caller: Caller;
  body: B;
  query: Q;
  params: Record<string, string>;
  req: Request;
  res: Response;
}

/** What a relay route module declares: typed body and query, and a handler that returns its JSON answer. */
interface RelayRouteSpec<B, Q> {
  method: 'get' | 'post';
  /** Spec form, `{id}` for path parameters. */
  path: string;
  summary: string;
  auth: CredentialKind;
  since: '0.9.3' | '0.9.19';
  body?: z.ZodType<B, unknown>;
  query?: z.ZodType<Q, unknown>;
  /**
   * `json` (default): the body is validated with `body` before the handler runs. `core`: JSON
   * parsed but validated by the handler through the protocol core (`body` only documents it).
   * `json-or-multipart`: the handler reads a multipart stream itself (fields in `multipart`) or
   * validates JSON itself.
   */
  bodyKind?: 'json' | 'core' | 'json-or-multipart';
  multipart?: z.ZodType;
  produces?: string;
  /** A second content type of the success answer, chosen by `Accept` (a file item's bytes). */
  alsoProduces?: string;
  response?: z.ZodType;
  successStatus?: number;
  /** Returns the JSON answer, or `alreadySent` when it wrote the answer itself. */
  handle(input: RouteInput<B, Q>): unknown;
}

/** Declares a relay route; query and body are parsed with the same schemas the document shows. */
export function route<B = undefined, Q = undefined>(spec: RelayRouteSpec<B, Q>): RelayRoute {
  const bodyKind = spec.bodyKind ?? 'json';
  const key = `${spec.method.toUpperCase()} ${spec.path}`;
  return {
    method: spec.method,
    path: spec.path,
    summary: spec.summary,
    auth: spec.auth,
    since: spec.since,
    ...(spec.query ? { query: spec.query } : {}),
    ...(spec.body
      ? { body: { kind: bodyKind === 'json-or-multipart' ? 'json-or-multipart' : 'json', schema: spec.body, required: true, ...(spec.multipart ? { multipart: spec.multipart } : {}) } }
      : {}),
    ...(spec.response ? { response: spec.response } : {}),
    ...(spec.produces ? { produces: spec.produces } : {}),
    ...(spec.alsoProduces ? { alsoProduces: spec.alsoProduces } : {}),
    ...(spec.successStatus ? { successStatus: spec.successStatus } : {}),
    ...(routeOtherSuccess[key] ? { otherSuccess: routeOtherSuccess[key] } : {}),
    // Listed, so /openapi.json names every error status of the route (no catch-all `default`).
    errors: { ...genericErrors, ...(spec.path.includes('{') ? pathErrors : {}), ...(spec.body ? bodyErrors : {}), ...routeErrors[key] },
    // With `Expect: 100-continue`, a body the handler would refuse for its declared type or size is
    // never asked for (the credential is checked before this, as for every route).
    ...(spec.body ? { beforeContinue: async (req: IncomingMessage) => refuseDeclaredSize(req, bodyKind) } : {}),
    handler: async (req, res, caller) => {
      // A body the JSON parser skipped (text/plain, a form) would otherwise be validated as `{}`: a
      // 422 `model_attributes_type` at best, silently ignored where every field is optional.
      // The header every vote sends is read without type-is (decision 0620).
      if (spec.body && bodyKind !== 'json-or-multipart' && carriesBytes(req) && req.headers['content-type'] !== 'application/json' && !req.is(JSON_TYPES)) throw notJson(mediaTypeOf(req));
      // What a route reads, before it is validated or stored (decision 0490); what it ignores may hold anything.
      // A parameter sent twice is read as its last value, as FastAPI reads it.
      const queryValues = spec.query ? lastQueryValues(req.query) : undefined;
      if (queryValues) refuseUnstorableText(queryValues, ['query']);
      if (spec.body && req.body !== undefined && !parsedWithoutEscapes(req)) refuseUnstorableText(req.body, ['body']);
      const query = (spec.query ? parseOr422(spec.query, queryValues, 'query') : req.query) as Q;
      // No body is an empty object; a JSON null is no object (a 422), not an empty one.
      const body = (spec.body && bodyKind === 'json' ? parseOr422(spec.body, req.body === undefined ? {} : req.body, 'body') : req.body) as B;
      res.status(spec.successStatus ?? 200);
      const result = await spec.handle({ caller, body, query, params: req.params as Record<string, string>, req, res });
      if (result !== alreadySent) res.json(result);
    },
  };
}

/**
 * What the route answers from the headers alone, as it would without `Expect`: the handler's 415 for
 * a body that is not JSON, else the 413 the parser or the upload answers for the declared
 * `Content-Length` (relay-service.ts sets the JSON limit). A body the JSON parser skips was never
 * held to its limit: with a size check first, a big text/plain body got 413 here and 415 without `Expect`.
 */
function refuseDeclaredSize(req: IncomingMessage, bodyKind: 'json' | 'core' | 'json-or-multipart'): void {
  const mediaType = mediaTypeOf(req);
  if (bodyKind === 'json-or-multipart' && mediaType === 'multipart/form-data') {
    const refused = declaredUploadTooLarge(req);
    if (refused) throw httpErrorOfRelay(refused);
    return;
  }
  if (!isJsonType(mediaType)) {
    if (bodyKind !== 'json-or-multipart' && carriesBytes(req)) throw notJson(mediaType);
    return;
  }
  if (Number(req.headers['content-length']) > relayLimits.jsonBodyMaxBytes) throw new HttpError(413, 'request body too large');
}

/** `JSON_TYPES` for a bare media type (`mediaTypeOf`). */
function isJsonType(mediaType: string): boolean {
  return mediaType === 'application/json' || /^application\/[^/]+\+json$/.test(mediaType);
}

/** What express.json parses for the relay (relay-service.ts). */
const JSON_TYPES = ['application/json', 'application/*+json'];

/** An empty POST (`content-length: 0`, what fetch sends without a body) keeps its usual answer. */
function carriesBytes(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length']) > 0;
}

function mediaTypeOf(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

/** The relay's guard: anonymous for open and signature-checked routes, else the credential the route names. */
export function relayGuard(credentials: Credentials): RouteGuard<Caller, CredentialKind> {
  return async (r, req: IncomingMessage) => {
    if (r.auth === undefined || r.auth === 'none' || r.auth === 'signature') return { kind: 'anonymous' };
    const header = req.headers.authorization;
    // Mapped here too: the `Expect: 100-continue` check answers only `HttpError`s itself.
    try {
      return requireCredential(await credentials.authenticate(typeof header === 'string' ? header : undefined), r.auth);
    } catch (err) {
      throw relayToHttpError(err);
    }
  };
}

/** The relay's credentials in /openapi.json; `x-credential` names each route's. */
export const relayOpenApiSecurity: OpenApiSecurity<CredentialKind> = {
  schemes: {
    human: { type: 'http', scheme: 'bearer', description: `${credentialFormats.human}. ${credentialMeaning.human}` },
    bot: { type: 'apiKey', in: 'header', name: 'Authorization', description: `${credentialFormats.bot}. ${credentialMeaning.bot}` },
  },
  of: (auth) => {
    const human: Record<string, string[]> = { human: [] };
    const bot: Record<string, string[]> = { bot: [] };
    const missing = { 401: 'credential missing, malformed or revoked' };
    const wrongKind = { 403: 'the wrong kind of credential for this endpoint' };
    const extensions = { 'x-credential': auth ?? 'none' };
    if (auth === 'human') return { security: [human], errors: { ...missing, ...wrongKind }, extensions };
    if (auth === 'bot') return { security: [bot], errors: { ...missing, ...wrongKind }, extensions };
    if (auth === 'human-or-bot') return { security: [human, bot], errors: missing, extensions };
    return { security: [], extensions };
  },
};

/** The caller, for routes that already required a human or bot credential. */
export function knownCaller(caller: Caller): KnownCaller {
  if (caller.kind === 'anonymous') throw new Error('an anonymous caller on a route that requires a credential; the route table and the handler disagree');
  return caller;
}

/** The caller's node id for routes that already required a human or bot credential. */
export function callerNode(caller: Caller): string {
  return knownCaller(caller).nodeId;
}

/** Marker for answers the handler already wrote itself (files, PNG, redirects). */
export const alreadySent = Symbol('alreadySent');
