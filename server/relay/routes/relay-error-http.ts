import { HttpError } from '../../http/http-error.js';
import { coreProblemsToValidation } from '../../../wire/problem-detail.js';
import { RelayRefusal, type RelayErrorCode } from '../domain/relay-errors.js';

/**
 * The one place a relay refusal gets its HTTP status. A `Record` over every code: a code added to
 * the catalog without a status does not compile (and `relay-errors.test.ts` checks it at run time).
 */
export const RELAY_ERROR_STATUS: Readonly<Record<RelayErrorCode, number>> = {
  invalid_input: 422,
  credential_missing: 401,
  credential_invalid: 401,
  credential_wrong_kind: 403,
  node_not_registered: 404,
  code_invalid: 400,
  code_rate_limited: 429,
  sms_not_delivered: 502,
  peer_not_public: 403,
  peer_unknown: 404,
  body_malformed: 400,
  upload_aborted: 400,
  file_too_large: 413,
  proof_reused: 409,
  item_not_found: 404,
  file_content_missing: 404,
  item_type_conflict: 409,
  signer_not_registered: 403,
  declaration_superseded: 409,
  node_not_found: 404,
  lookup_rate_limited: 429,
  bots_limit_reached: 409,
  not_operator: 403,
  invites_limit_reached: 409,
  invite_unusable: 404,
  invite_refused: 409,
  pairings_limit_reached: 409,
  pairing_unknown: 404,
  pairing_not_pending: 410,
  pairing_with_self: 409,
};

/** Headers of a code's every answer: the relay's two credential schemes on a 401 (RFC 6750 §3). */
const FIXED_HEADERS: Partial<Record<RelayErrorCode, Readonly<Record<string, string>>>> = {
  credential_missing: { 'WWW-Authenticate': 'Bearer realm="x-relay", Bot realm="x-relay"' },
  credential_invalid: { 'WWW-Authenticate': 'Bearer realm="x-relay", Bot realm="x-relay"' },
  // The rest of an oversized upload is never read: the connection cannot carry another request.
  file_too_large: { Connection: 'close' },
};

/** `err` as the answer the error handler writes: `{"detail"}` with its status and headers. */
export function httpErrorOfRelay(err: RelayRefusal): HttpError {
  const status = RELAY_ERROR_STATUS[err.code];
  const { input, entries, retryAfterSeconds } = err.extra;
  // Input problems are 422 entries in pydantic's words, from the wire's one translator.
  if (input) return new HttpError(status, coreProblemsToValidation(input.problems, input.where));
  if (entries) return new HttpError(status, [...entries]);
  const headers: Record<string, string> = { ...FIXED_HEADERS[err.code] };
  if (retryAfterSeconds !== undefined) headers['Retry-After'] = String(retryAfterSeconds);
  return new HttpError(status, err.detail, headers);
}

/** A relay refusal mapped to its HTTP answer; anything else passed on as it is (the error handler decides). */
export function relayToHttpError(err: unknown): unknown {
  return err instanceof RelayRefusal ? httpErrorOfRelay(err) : err;
}
