import type { z } from 'zod';
import type { Problem } from '../../../core/relay/problem.js';
import { type ValidationErrorItem, coreProblemsToValidation, safeParseForProblems, zodIssuesToValidation } from '../../../wire/problem-detail.js';

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
  /** A signed registration or session document whose signature was used before (no replay). */
  'proof_reused',
  /** No item of that id is stored here. */
  'item_not_found',
  /** A file item stored here without its bytes. */
  'file_content_missing',
  /** An item id stored here as the other type (claim or file). */
  'item_type_conflict',
  /** A signed statement (a vote, a slice declaration) by a node this relay does not know. */
  'signer_not_registered',
  /** A slice declaration older than the node's published one. */
  'declaration_superseded',
  /** No node of that id is known here. */
  'node_not_found',
  /** Phone lookups by one caller over their hourly bound (`retryAfterSeconds`). */
  'lookup_rate_limited',
  /** A node with the most bots allowed. */
  'bots_limit_reached',
  /** A peer change asked for by someone who is not one of this relay's operators (or none are named). */
  'not_operator',
  /** A node with the most open invites allowed. */
  'invites_limit_reached',
  /** An invite code that is unknown, used or expired: one answer for all. */
  'invite_unusable',
  /** An invite its own inviter, or a node that accepted one already, tries to accept. */
  'invite_refused',
  /** A node with the most pending pairing tokens allowed. */
  'pairings_limit_reached',
  /** A pairing token this relay does not know. */
  'pairing_unknown',
  /** A pairing token that was used or expired. */
  'pairing_not_pending',
  /** A pairing token confirmed by the node that started it. */
  'pairing_with_self',
] as const;

export type RelayErrorCode = (typeof RELAY_ERROR_CODES)[number];

/** What a refusal carries besides its detail, for the edge to turn into headers or 422 entries. */
export interface RelayRefusalExtra {
  /** When trying again makes sense, in whole seconds (`Retry-After`). */
  retryAfterSeconds?: number;
  /** `invalid_input`: what is wrong, each problem's path under `where` (`['body']`, `['query', 'phone']`). */
  input?: { where: (string | number)[]; problems: readonly Problem[] };
  /** `invalid_input` found by a wire schema: its 422 entries, already worded by the wire's translator. */
  entries?: readonly ValidationErrorItem[];
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
  return new RelayRefusal('invalid_input', validationMessage(coreProblemsToValidation(problems, where)), { input: { where, problems } });
}

/**
 * `input` parsed with a wire schema, or the refusal of it located under `where` (`body`, `query`):
 * what `parseOr422` is to routes, for use cases, which name no HTTP status.
 */
export function parseOrRefuse<T>(schema: z.ZodType<T>, input: unknown, where: string): T {
  const result = safeParseForProblems(schema, input);
  if (result.success) return result.data;
  const entries = zodIssuesToValidation(result.error.issues, where, input);
  throw new RelayRefusal('invalid_input', validationMessage(entries), { entries });
}

function validationMessage(entries: readonly ValidationErrorItem[]): string {
  return `validation failed: ${entries.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; ')}`;
}
