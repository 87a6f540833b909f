import { canonicalJson } from './canonical-json.js';
import { VOTE_FIELDS, canonicalVoteText } from './canonical-vote.js';
import { isItemId } from './claim.js';
import { type KeyVerdict, publicKeyFromSecret, signEd25519, verifyEd25519, verifyEd25519Async } from './ed25519.js';
import { HEX64_PATTERN, type Problem, RelayError, type Validated, isPlainObject, notAnObject, unwrap } from './problem.js';
import { isNodeId, publicKeyToNodeId } from './node-id.js';
import { type QuorumSet, validateQuorumSet } from './quorum-set.js';

/**
 * x.vote/1 documents (design note scp-s5, "Statements"). A vote is a signed fact, never an update:
 * `voter` says `value` about `item` in `phase`, under the slice it declares.
 *
 * `sig` is the 64-byte Ed25519 signature in base64url without padding (RFC 4648 section 5): exactly 86
 * characters, and the last one must leave the 4 unused bits zero, so one signature has exactly one
 * spelling (a lenient decoder would let 16 strings carry the same signature). Hex was the other option;
 * base64url is shorter and what JOSE uses for Ed25519.
 */
export const VOTE_SCHEMA = 'x.vote/1';
export const VOTE_SCHEME = 'scp-s5';

export const voteValues = ['yes', 'no'] as const;
export type VoteValue = (typeof voteValues)[number];
export const votePhases = ['vote', 'accept', 'confirm'] as const;
export type VotePhase = (typeof votePhases)[number];

export interface Vote {
  schema: typeof VOTE_SCHEMA;
  scheme: typeof VOTE_SCHEME;
  /** Item id: SHA-256 hex. */
  item: string;
  /** node_id of the signer. */
  voter: string;
  value: VoteValue;
  phase: VotePhase;
  /** The voter's declared slice at signing time; exactly one of `slice` and `slice_hash`. */
  slice?: QuorumSet;
  /** `quorumSetHash` of the voter's slice, when the slice itself is not carried. */
  slice_hash?: string;
  /** Unix seconds, whole, when the voter signed. */
  created_at: number;
  /** Ed25519 signature, base64url without padding (86 characters). */
  sig: string;
  /** Free-form, NOT signed: relays may add or change it. */
  hint?: unknown;
}

/** A vote before signing. */
export type UnsignedVote = Omit<Vote, 'sig'>;

/** The opposite value. */
export function otherValue(value: VoteValue): VoteValue {
  return value === 'yes' ? 'no' : 'yes';
}

const SIG = /^[A-Za-z0-9_-]{85}[AQgw]$/;
const PLACEHOLDER_SIG = 'A'.repeat(86);

/**
 * How deep a vote's `hint` may nest (arrays and objects). The hint is "anything, unsigned", but a
 * relay stores and serves it as JSON text, and serialising a hint nested 10 000 deep overflowed
 * the stack (a 500 for the client, and a page a peer could never ingest).
 */
export const VOTE_HINT_MAX_DEPTH = 32;

/**
 * How long a vote's `hint` may be, as UTF-8 bytes of its JSON. The hint is unsigned, so whoever
 * first sends a signed vote decides the hint every relay stores and forwards with it; without a
 * bound that was the whole JSON body (about 400 KB) per statement, on every relay of the network.
 * 4 KiB holds any route or note a client writes.
 */
export const VOTE_HINT_MAX_BYTES = 4096;

/** UTF-8 bytes of `value` as JSON; called only on a hint already bounded in depth. */
function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}

/** True when `value` holds arrays or objects nested more than `maxDepth` deep; walked without recursion. */
function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  const todo: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  for (let next = todo.pop(); next !== undefined; next = todo.pop()) {
    if (next.value === null || typeof next.value !== 'object') continue;
    if (next.depth >= maxDepth) return true;
    for (const inner of Object.values(next.value)) todo.push({ value: inner, depth: next.depth + 1 });
  }
  return false;
}

/** True for a canonical base64url (unpadded) spelling of 64 bytes. */
export function isSignatureText(s: unknown): s is string {
  return typeof s === 'string' && SIG.test(s);
}

/** A key holding undefined is absent: JSON cannot carry it, and programmatic callers spread optionals. */
function has(input: Record<string, unknown>, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(input, key) && input[key] !== undefined;
}

/** Module functions, not closures made on each `parseVote` (a relay parses one per vote it receives). */
function literal(input: Record<string, unknown>, problems: Problem[], key: string, expected: readonly string[]): void {
  if (!has(input, key)) problems.push({ path: [key], code: 'missing' });
  else if (!expected.includes(input[key] as string)) problems.push({ path: [key], code: 'not_one_of', input: input[key], expected });
}

/** `what` says what the hex names ("a node_id"). */
function hex(input: Record<string, unknown>, problems: Problem[], key: string, what: string): void {
  if (!has(input, key)) problems.push({ path: [key], code: 'missing' });
  else if (!isItemId(input[key])) problems.push({ path: [key], code: 'pattern_mismatch', input: input[key], expected: HEX64_PATTERN, note: what });
}

/**
 * Parses an untrusted x.vote/1 document into a `Vote` (the signature is NOT checked here: call
 * `verifyVote`). Unknown top-level fields are refused (`extra`): they would be signed but
 * meaningless, and a relay must be able to re-serialise what it stores.
 */
export function parseVote(input: unknown): Validated<Vote> {
  if (!isPlainObject(input)) {
    return { ok: false, problems: [notAnObject([], input)] };
  }
  const problems: Problem[] = [];
  literal(input, problems, 'schema', [VOTE_SCHEMA]);
  literal(input, problems, 'scheme', [VOTE_SCHEME]);
  hex(input, problems, 'item', 'an item id, SHA-256 hex');
  hex(input, problems, 'voter', 'a node_id');
  literal(input, problems, 'value', voteValues);
  literal(input, problems, 'phase', votePhases);
  if (!has(input, 'created_at')) problems.push({ path: ['created_at'], code: 'missing' });
  else {
    const at = input.created_at;
    if (typeof at !== 'number' || !Number.isSafeInteger(at)) problems.push({ path: ['created_at'], code: 'not_integer', input: at, note: 'Unix seconds' });
    else if (at < 0) problems.push({ path: ['created_at'], code: 'below_minimum', input: at, limit: 0 });
  }
  if (!has(input, 'sig')) problems.push({ path: ['sig'], code: 'missing' });
  else if (!isSignatureText(input.sig)) problems.push({ path: ['sig'], code: 'signature_text', input: input.sig });
  let slice: QuorumSet | undefined;
  if (has(input, 'slice') && has(input, 'slice_hash')) {
    problems.push({ path: ['slice_hash'], code: 'slice_and_slice_hash' });
  } else if (has(input, 'slice')) {
    const parsed = validateQuorumSet(input.slice, isNodeId(input.voter) ? { self: input.voter } : {});
    if (parsed.ok) slice = parsed.value;
    else for (const problem of parsed.problems) problems.push({ ...problem, path: ['slice', ...problem.path] });
  } else if (has(input, 'slice_hash')) {
    hex(input, problems, 'slice_hash', 'quorumSetHash of the slice');
  } else {
    problems.push({ path: ['slice'], code: 'missing', note: 'slice or slice_hash' });
  }
  for (const key of Object.keys(input)) {
    if (!VOTE_FIELDS.has(key)) problems.push({ path: [key], code: 'extra', input: input[key] });
  }
  if (has(input, 'hint') && nestsDeeperThan(input.hint, VOTE_HINT_MAX_DEPTH)) {
    problems.push({ path: ['hint'], code: 'hint_too_deep', limit: VOTE_HINT_MAX_DEPTH });
  } else if (has(input, 'hint') && jsonBytes(input.hint) > VOTE_HINT_MAX_BYTES) {
    problems.push({ path: ['hint'], code: 'hint_too_big', limit: VOTE_HINT_MAX_BYTES });
  }
  if (problems.length > 0) return { ok: false, problems };
  const vote: Vote = {
    schema: VOTE_SCHEMA,
    scheme: VOTE_SCHEME,
    item: input.item as string,
    voter: input.voter as string,
    value: input.value as VoteValue,
    phase: input.phase as VotePhase,
    ...(slice ? { slice } : { slice_hash: input.slice_hash as string }),
    created_at: input.created_at as number,
    sig: input.sig as string,
    ...(has(input, 'hint') ? { hint: input.hint } : {}),
  };
  return { ok: true, value: vote };
}

const UTF8 = new TextEncoder();

/**
 * The bytes a vote signature covers: UTF-8 of the RFC 8785 canonical JSON of the document without its
 * top-level `sig` and `hint`. Works on signed and unsigned votes alike.
 */
export function voteSigningBytes(vote: UnsignedVote | Vote): Uint8Array {
  // The plain shape (every parsed vote) written out directly, the same text (decision 1160).
  const plain = canonicalVoteText(vote);
  if (plain !== null) return UTF8.encode(plain);
  // Top-level keys holding undefined are absent, as in parseVote; nested undefined still throws.
  // No prototype: an own `__proto__` key (JSON.parse makes one) stays a key, as Object.fromEntries kept it.
  const signed = Object.create(null) as Record<string, unknown>;
  for (const key of Object.keys(vote)) {
    const value = (vote as unknown as Record<string, unknown>)[key];
    if (key !== 'sig' && key !== 'hint' && value !== undefined) signed[key] = value;
  }
  return UTF8.encode(canonicalJson(signed));
}

/**
 * Signs a vote with the voter's 32-byte secret seed. Throws `RelayError` when the document is not a
 * valid vote or the key is not the voter's (a scenario signing for the wrong node should fail loudly).
 */
export function signVote(unsigned: UnsignedVote, secretKey: Uint8Array): Vote {
  const signerId = publicKeyToNodeId(publicKeyFromSecret(secretKey));
  if (signerId !== unsigned.voter) {
    throw new RelayError(`secret key belongs to node ${signerId}, not to voter ${String(unsigned.voter)}`);
  }
  // Parse first (with a well-formed placeholder sig): a malformed document is refused with its problems
  // before anything is signed, and the signed bytes are those of the parsed, typed document.
  const parsed = unwrap(parseVote({ ...unsigned, sig: PLACEHOLDER_SIG }), 'vote');
  const sig = Buffer.from(signEd25519(voteSigningBytes(parsed), secretKey)).toString('base64url');
  return { ...parsed, sig };
}

/** The inputs of one vote's signature check (`signatureCheckOf`). */
export interface SignatureCheck {
  sig: Uint8Array;
  message: Uint8Array;
  publicKey: Uint8Array;
  /** The voter id: `publicKey` in lower-case hex. */
  publicKeyHex: string;
}

/**
 * What checking `vote`'s signature takes: the signature's bytes, the signed bytes and the voter's key
 * with its hex (the voter id, checked to be that: the key cache is looked up by it, decision 1160).
 * Null for a vote refused before any curve arithmetic: a malformed voter id or signature text, or a
 * document with no canonical form. The relay's signature thread takes the same (decision 1090).
 */
export function signatureCheckOf(vote: Vote): SignatureCheck | null {
  if (!isNodeId(vote.voter) || !isSignatureText(vote.sig)) return null;
  let message: Uint8Array;
  try {
    message = voteSigningBytes(vote);
  } catch {
    return null;
  }
  return { sig: Buffer.from(vote.sig, 'base64url'), message, publicKey: Buffer.from(vote.voter, 'hex'), publicKeyHex: vote.voter };
}

/** `verifyVote` with the signature check on the thread pool (`verifyEd25519Async`); same answers. */
export function verifyVoteAsync(vote: Vote, options: KeyVerdict = {}): Promise<boolean> {
  const check = signatureCheckOf(vote);
  return check ? verifyEd25519Async(check.sig, check.message, check.publicKey, { ...options, publicKeyHex: check.publicKeyHex }) : Promise.resolve(false);
}

/**
 * True when `vote.sig` is the voter's Ed25519 signature over `voteSigningBytes(vote)`. The key is the
 * voter's node_id; malformed ids, refused keys (small-order, non-canonical) and non-canonical
 * signatures are false, never exceptions. `options.keyChecked`: the caller knows the voter's key
 * passed `checkPublicKey` (a registered node's did), so it is not checked again.
 */
export function verifyVote(vote: Vote, options: KeyVerdict = {}): boolean {
  const check = signatureCheckOf(vote);
  return check !== null && verifyEd25519(check.sig, check.message, check.publicKey, { ...options, publicKeyHex: check.publicKeyHex });
}
