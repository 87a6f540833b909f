/**
 * The statuses each relay route answers beyond its main success status, for /openapi.json (issue
 * 18: an outside client written from the documents knows every error a route gives). The same
 * facts in prose: docs/relay-api.md, "Error statuses per route"; `relay-answered-statuses.test.ts`
 * provokes each one over HTTP and checks the two agree. 401 and 403 for credentials come from
 * `relayOpenApiSecurity`, 422 for input from the OpenAPI builder, and the ones every route or every
 * route with a body can answer from `genericErrors` and `bodyErrors`.
 */
export const genericErrors: Record<number, string> = {
  500: 'Internal Server Error (unexpected; logged on the server, never with its stack)',
  503: "the relay's database could not be synced to disk: every request is refused, before it runs, until the relay restarts (one in flight at the failure may have been stored; decision 0480); or the relay is starting (Retry-After: 1)",
};

/** Every route with path parameters: each is checked before it is looked up. */
export const pathErrors: Record<number, string> = { 422: 'Validation Error: a malformed path parameter (an id that is not 64 hex characters, a token of the wrong form)' };

/** Every route taking a JSON body: express.json's size bound and the media type check of `route()`. */
export const bodyErrors: Record<number, string> = {
  400: 'There was an error parsing the body: a JSON body whose bytes are not UTF-8 (FastAPI\'s answer)',
  413: 'request body over the JSON limit (jsonBodyMaxBytes)',
  415: 'a body that is not application/json',
  422: 'Validation Error (also `json_invalid` for JSON that does not parse)',
};

const rateLimited = 'too many requests from your address (Retry-After)';
const codeLimit = 'a code for this number was sent within 60 s, or 5 in the last hour (Retry-After)';

/** "METHOD /path" -> error status -> when. */
export const routeErrors: Record<string, Record<number, string>> = {
  'POST /register': { 409: 'this signed document was already used', 422: 'stale created_at, another relay, a bad signature or an unacceptable key', 429: rateLimited },
  'POST /session': { 404: 'node not registered on this relay', 409: 'this signed document was already used', 422: 'as POST /register', 429: rateLimited },
  'POST /login': { 429: `${codeLimit}; or ${rateLimited}` },
  'POST /recover/start': { 429: `${codeLimit}; or ${rateLimited}` },
  'POST /me/phone': { 429: codeLimit },
  'POST /login/verify': { 400: 'invalid or expired code', 429: rateLimited },
  'POST /recover/finish': { 400: 'invalid or expired code', 429: rateLimited },
  'POST /me/phone/verify': { 400: 'invalid or expired code' },
  'GET /lookup': { 429: 'over 30 lookups per hour by this caller (Retry-After)' },
  'POST /bots': { 409: 'the node has the most bots allowed (bots_per_node_max)' },
  'GET /nodes/{id}': { 404: 'no such node on this relay' },
  'GET /items/{id}': { 404: 'no such item, or (Accept: application/octet-stream) its bytes are not stored here' },
  'POST /items': {
    400: 'malformed multipart body',
    409: 'the id is stored here as the other type (claim or file)',
    413: 'a file over file_max_bytes, or a JSON body over its limit',
    415: 'neither application/json nor multipart/form-data',
  },
  'POST /items/{id}/vote': { 403: 'the voter is not a known node', 404: 'no such item on this relay', 422: 'item mismatch, created_at in the future, a bad sig, an unknown slice_hash or a malformed statement' },
  'GET /items/{id}/bulletin/{node}': { 404: 'no such item on this relay', 422: 'malformed node id' },
  'POST /slice': { 422: 'a quorum set the sanity rules refuse' },
  'POST /slice/include': { 422: 'a slice the sanity rules refuse' },
  'POST /slice/exclude': { 422: 'a node not in the slice, or a slice left empty or with t above its entries' },
  'POST /slice/declare': { 403: 'the node is not a known node', 409: 'a newer declaration of this node is published', 422: 'malformed, bad sig, or updated_ms ahead of the relay clock' },
  'POST /items/{id}/report': { 404: 'no such item on this relay' },
  'POST /invites': { 409: 'at most 20 open invites' },
  'POST /invites/accept': { 404: 'unknown, used or expired invite code', 409: 'your own invite, or you already accepted one' },
  'GET /pair/{token}': { 404: 'unknown pairing token' },
  'GET /pair/{token}/qr': { 404: 'unknown pairing token', 410: 'the token was used or expired' },
  'POST /pair/start': { 409: 'at most 20 pending pairing tokens' },
  'POST /pair/confirm': { 404: 'unknown pairing token', 409: 'your own token', 410: 'the token was used or expired' },
  'POST /reach': { 403: 'not an operator, or a peer on a non-public address', 422: 'not an http(s) URL, or the relay itself' },
  'POST /reach/probe': { 403: 'not an operator', 404: 'url is not a known peer' },
  'POST /federation/pull': { 403: 'not an operator', 404: 'url is not a known peer' },
  'GET /events': { 422: 'limit outside 1..500, over 100 authors, or a malformed author' },
};

/** "METHOD /path" -> success statuses beside the route's main one, with when. */
export const routeOtherSuccess: Record<string, Record<number, string>> = {
  'POST /register': { 200: 'the node was already registered: its current credential again (created: false)' },
  'POST /items': { 200: 'the same content was stored before (ids are content addresses)' },
  'POST /items/{id}/vote': { 200: 'the same (voter, item, value, phase) was stored before (duplicate: true)' },
  'POST /reach': { 200: 'the peer was known: added again (its standing starts afresh)' },
};
