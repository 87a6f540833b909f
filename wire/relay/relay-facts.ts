/**
 * The facts the relay publishes: version, identifiers, limits and credential formats. `/health`,
 * `/openapi.json`, docs/relay-api.md, the human site, `/AGENTS.md` and `/llms.txt` are all built
 * from these constants, so they cannot disagree.
 */
export const relayVersion = '0.9.19';
export const relayProtocol = 'x-relay';
export const relayScheme = 'scp-s5';
export const claimSchema = 'x.claim/1';
export const voteSchema = 'x.vote/1';
export const registerSchema = 'x.register/1';
export const sessionSchema = 'x.session/1';

/** Limits from the spec's Limits table (title, body, file) plus the relay's own operational bounds. */
export const relayLimits = {
  /** Unicode code points, not UTF-16 units or bytes. */
  titleMaxChars: 200,
  /** Unicode code points. */
  bodyMaxChars: 32000,
  /** Bytes of file content; a larger upload is refused with 413 while streaming. */
  fileMaxBytes: 16777216,
  /** Events per page of GET /events. */
  eventsPageMax: 500,
  eventsPageDefault: 100,
  /**
   * Bytes of event data (JSON, as answered) one GET /events page carries before it ends short of `limit`
   * (always at least one event): 500 events with the largest payloads made an anonymous caller
   * worth tens of MB of parsing and JSON per request.
   */
  eventsPagePayloadMaxBytes: 4 * 1024 * 1024,
  /** Node ids in one `authors` filter. */
  authorsFilterMax: 100,
  /** Signed registration and session documents must be this fresh (both directions). */
  proofMaxSkewSeconds: 300,
  nameMaxChars: 80,
  aboutMaxChars: 1000,
  reportNoteMaxChars: 2000,
  /** One-time phone codes. */
  codeDigits: 6,
  codeTtlSeconds: 600,
  codeMaxAttempts: 5,
  codeMinIntervalSeconds: 60,
  codeMaxPerHour: 5,
  lookupsPerHour: 30,
  pairTokenTtlSeconds: 300,
  inviteTtlSeconds: 7 * 24 * 3600,
  openInvitesMax: 20,
  /** Pairing tokens of one node pending at once (an extension: the interface sets no bound, and each is a stored row). */
  pendingPairingsMax: 20,
  botsPerNodeMax: 20,
  searchResultsMax: 50,
  /**
   * JSON request bodies. Sized for the worst valid claim, not for its UTF-8 length: JSON may escape
   * every character, and an astral one escapes as a surrogate pair (`\ud83d\ude00`, 12 bytes), so a
   * maximal title and body take 12 x (200 + 32000) = 386400 bytes; 16 KiB more covers the keys,
   * `kind` and whitespace. (It was 256 KiB, which refused valid escaped claims with 413.)
   */
  jsonBodyMaxBytes: 12 * (200 + 32000) + 16 * 1024,
} as const;

/** Which credential an endpoint accepts. */
export type CredentialKind = 'none' | 'human' | 'bot' | 'human-or-bot' | 'signature';

export const credentialFormats = {
  human: 'Authorization: Bearer <node_id>.<hmac>',
  bot: 'Authorization: Bot <token>',
} as const;

/** One line per credential kind, for the tables in the docs and on the site. */
export const credentialMeaning: Record<CredentialKind, string> = {
  none: 'no credential; any Authorization header is ignored',
  human: 'human only: `Bearer <node_id>.<hmac>`; a Bot token is refused with 403',
  bot: 'bot only: `Bot <token>`; a human Bearer credential is refused with 403',
  'human-or-bot': 'a human Bearer credential or a Bot token (a bot acts for the node that created it)',
  signature: 'no header needed: the Ed25519 signature inside the document authenticates it',
};

/** Public JSON of the limits, as reported by /health. */
export function publicLimits(): Record<string, number> {
  return {
    title_max_chars: relayLimits.titleMaxChars,
    body_max_chars: relayLimits.bodyMaxChars,
    file_max_bytes: relayLimits.fileMaxBytes,
    events_page_max: relayLimits.eventsPageMax,
    authors_filter_max: relayLimits.authorsFilterMax,
    proof_max_skew_seconds: relayLimits.proofMaxSkewSeconds,
    code_digits: relayLimits.codeDigits,
    code_ttl_seconds: relayLimits.codeTtlSeconds,
    code_max_attempts: relayLimits.codeMaxAttempts,
    code_min_interval_seconds: relayLimits.codeMinIntervalSeconds,
    code_max_per_hour: relayLimits.codeMaxPerHour,
    lookups_per_hour: relayLimits.lookupsPerHour,
    pair_token_ttl_seconds: relayLimits.pairTokenTtlSeconds,
    invite_ttl_seconds: relayLimits.inviteTtlSeconds,
    bots_per_node_max: relayLimits.botsPerNodeMax,
  };
}
