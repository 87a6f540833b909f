import type { Problem } from '../../../core/relay/problem.js';
import { coreProblemsToValidation } from '../../../wire/problem-detail.js';

/**
 * The relay's domain errors: one stable code per way its domain refuses a request, and the detail
 * the caller reads. Domain modules (credentials, phone codes, federation, the file store, signed
 * statements) throw `RelayRefusal` and never choose an HTTP status; the edge maps each code to
 * one, once (`relay-error-http.ts`), as the bench's `bench-errors.ts` does (decision 0670).
 */
export const RELAY_ERROR_CODES = [
  /** Input that breaks a rule; `problems` (worded by the wire's one translator) say which, where. */
  'invalid_input',
  /** No credential where the endpoint needs one. */
  'credential_missing',
  /** A present credential that is malformed, unknown or revoked (never read as anonymous). */
  'credential_invalid',
  /** A human credential where a bot's is needed, or the other way round. */
  'credential_wrong_kind',
  /** The node is not registered on this relay (no credential can be made for it). */
  'node_not_registered',
  /** A phone code that is unknown, expired, used up or someone else's: one answer for all. */
  'code_invalid',
  /** Codes for a number requested too often (`retryAfterSeconds` says when to try again). */
  'code_rate_limited',
  /** The SMS gateway refused a message the caller waits for. */
  'sms_not_delivered',
  /** A peer asked for over HTTP whose address is not public. */
  'peer_not_public',
  /** A peer URL this relay does not know. */
  'peer_unknown',
  /** A multipart body that is not well-formed or ends early. */
  'body_malformed',
  /** The client went away before its upload was complete. */
  'upload_aborted',
  /** An upload over the file limit; nothing was stored and the rest of the body is not read. */
  'file_too_large',
] as const;

export type RelayErrorCode = (typeof RELAY_ERROR_CODES)[number];

/** What a refusal carries besides its detail, for the edge to turn into headers or 422 entries. */
export interface RelayRefusalExtra {
  /** When trying again makes sense, in whole seconds (`Retry-After`). */
  retryAfterSeconds?: number;
  /** `invalid_input`: what is wrong, each problem's path under `where` (`['body']`, `['query', 'phone']`). */
  input?: { where: (string | number)[]; problems: readonly Problem[] };
}

/** A refusal of the relay, by catalog code; `detail` is what the caller reads, word for word. */
export class RelayRefusal extends Error {
  override readonly name = 'RelayRefusal';
  constructor(
    readonly code: RelayErrorCode,
    readonly detail: string,
    readonly extra: RelayRefusalExtra = {},
  ) {
    super(detail);
  }
}

/**
 * The refusal of input that breaks the rules `problems` name, located under `where`. Its message
 * reads as the 422 entries do (`validation failed: body.url: Value error, ...`), which is what a
 * peer's refused event records.
 */
export function invalidInputAt(where: (string | number)[], problems: readonly Problem[]): RelayRefusal {
  const entries = coreProblemsToValidation(problems, where);
  const detail = `validation failed: ${entries.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; ')}`;
  return new RelayRefusal('invalid_input', detail, { input: { where, problems } });
}
