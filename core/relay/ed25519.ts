import {
  type KeyObject,
  createHash,
  createPrivateKey,
  createPublicKey,
  randomBytes,
  sign as cryptoSign,
  verify as cryptoVerify,
} from 'node:crypto';
import * as noble from '@noble/ed25519';
import { RelayError } from './problem.js';

/**
 * Ed25519 for the relay: key checks, signing, and THE verifier. Both candidate verifiers live here so
 * the bench and the agreement tests can compare them; everything else calls `verifyEd25519`, which is
 * `node:crypto` (OpenSSL). Why: docs/decisions/0101-ed25519-verifier.md.
 *
 * Both verifiers are fenced by the same strict pre-checks (`checkPublicKey`, `isCanonicalSignature`)
 * so they agree on every edge case we know of: non-canonical S, small-order and mixed-order keys,
 * non-canonical key encodings.
 */

// noble v3 ships without a hash; node:crypto's SHA-512 is the one we trust anyway.
noble.hashes.sha512 = (message: Uint8Array) => new Uint8Array(createHash('sha512').update(message).digest());

/** 2^255 - 19, the field prime. */
const P = (1n << 255n) - 19n;
/** Order of the prime-order subgroup. */
export const ED25519_L = (1n << 252n) + 27742317777372353535851937790883648493n;

function littleEndian(bytes: Uint8Array): bigint {
  let n = 0n;
  for (let k = bytes.length - 1; k >= 0; k--) n = (n << 8n) | BigInt(bytes[k] ?? 0);
  return n;
}

/** Why a 32-byte string is refused as a node's public key, or null when it is fine. */
export type PublicKeyProblem =
  | 'wrong-length'
  | 'non-canonical-encoding'
  | 'not-a-curve-point'
  | 'small-order'
  | 'mixed-order';

/**
 * Registration check for a raw Ed25519 public key. Refuses non-canonical encodings (y >= p, or x = 0
 * with the sign bit set), bytes that decode to no curve point, the 8 small-order points (they verify
 * forged messages; all-zero is one of them, of order 4) and mixed-order points (a torsion component:
 * cofactored and cofactorless verifiers disagree on them, and no honest key generator makes one).
 */
export function checkPublicKey(bytes: Uint8Array): PublicKeyProblem | null {
  if (bytes.length !== 32) return 'wrong-length';
  const y = littleEndian(bytes) & ((1n << 255n) - 1n);
  if (y >= P) return 'non-canonical-encoding';
  let point: noble.Point;
  try {
    point = noble.Point.fromBytes(bytes, false);
  } catch {
    // Strict decoding also throws for x = 0 with the sign bit set: y = 1 or y = p - 1 spelled oddly.
    return y === 1n || y === P - 1n ? 'non-canonical-encoding' : 'not-a-curve-point';
  }
  if (point.isSmallOrder()) return 'small-order';
  if (!point.isTorsionFree()) return 'mixed-order';
  return null;
}

/**
 * True for the encodings the design note says to refuse outright: the 8 small-order points and every
 * non-canonical encoding (all-zero included). Use `checkPublicKey` at registration: it refuses more.
 */
export function isSmallOrderPublicKey(bytes: Uint8Array): boolean {
  if (bytes.length !== 32) return false;
  const problem = checkPublicKey(bytes);
  return problem === 'small-order' || problem === 'non-canonical-encoding';
}

/**
 * A signature is canonical when S < L (RFC 8032 section 5.1.7, step 1) and R's y is below p. Refusing
 * S + L stops anyone re-encoding a signature into a second valid one.
 */
export function isCanonicalSignature(sig: Uint8Array): boolean {
  if (sig.length !== 64) return false;
  // Byte by byte from the most significant end: the same comparisons as on the bigints, without
  // building two of them bit by bit for every signature checked.
  return lessThan(sig, 32, 0xff, L_BYTES) && lessThan(sig, 0, 0x7f, P_BYTES);
}

/** Little-endian 32-byte encodings of L and p, for `lessThan`. */
const L_BYTES = littleEndianBytes(ED25519_L);
const P_BYTES = littleEndianBytes(P);

function littleEndianBytes(n: bigint): Uint8Array {
  const out = new Uint8Array(32);
  for (let k = 0; k < 32; k++) out[k] = Number((n >> BigInt(8 * k)) & 0xffn);
  return out;
}

/**
 * Whether the little-endian number in `bytes[at..at + 32)`, its top byte masked with `topMask`
 * (0x7f: the low 255 bits, as R's y), is below `limit`.
 */
function lessThan(bytes: Uint8Array, at: number, topMask: number, limit: Uint8Array): boolean {
  for (let k = 31; k >= 0; k--) {
    const b = k === 31 ? (bytes[at + k] ?? 0) & topMask : (bytes[at + k] ?? 0);
    const l = limit[k] ?? 0;
    if (b !== l) return b < l;
  }
  return false;
}

/** A raw verifier: signature bytes, message bytes, raw 32-byte public key. */
export type Ed25519Verifier = (sig: Uint8Array, message: Uint8Array, publicKey: Uint8Array, options?: KeyVerdict & KeyName) => boolean;

/**
 * What the caller already knows of the public key. `keyChecked`: it passed `checkPublicKey` before
 * (a relay's registered node did, at registration, and the relay keeps that verdict in its nodes
 * table), so the verifier need not check it again; a first vote after a restart then costs no
 * scalar multiplication in JavaScript. Without it the key is checked (memoised).
 */
export interface KeyVerdict {
  keyChecked?: boolean;
}

/**
 * `publicKeyHex`: the public key's lower-case hex when the caller holds it (a relay verifying a vote
 * holds the voter's node id, which is that), so the parsed-key cache is looked up without encoding
 * the key again. It must name `publicKey`; a relay passes the id the key was decoded from.
 */
export interface KeyName {
  publicKeyHex?: string;
}

const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

// Parsing a public key into an OpenSSL key object costs about as much as a verification, and a relay
// verifies many votes from each voter: keep the last 16 384.
const KEY_CACHE_LIMIT = 16_384;
/**
 * The key check is a scalar multiplication (milliseconds), so its answers are kept for far more
 * keys (a string and a boolean each, ~100 B): with 10 000 voters cycling through a round, a
 * 4096-entry first-in-first-out memo missed on every vote and halved ingest (issue 18 bench).
 */
const ACCEPTABLE_KEY_MEMO_LIMIT = 262_144;
const keyCache = new Map<string, KeyObject>();

/** `id`: the key's lower-case hex, when the caller holds it already (a node id is that). */
function publicKeyObject(publicKey: Uint8Array, id = Buffer.from(publicKey).toString('hex')): KeyObject {
  const cached = keyCache.get(id);
  if (cached) return cached;
  const key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, publicKey]), format: 'der', type: 'spki' });
  if (keyCache.size >= KEY_CACHE_LIMIT) {
    const oldest = keyCache.keys().next().value;
    if (oldest !== undefined) keyCache.delete(oldest);
  }
  keyCache.set(id, key);
  return key;
}

const acceptableKeys = new Map<string, boolean>();

/**
 * Forgets every parsed key object and key verdict: what a new process starts without. The ingest
 * bench measures a voter's first vote after a restart with it (perf/relay-ingest-scene.ts).
 */
export function forgetKeyCaches(): void {
  keyCache.clear();
  acceptableKeys.clear();
}

/**
 * The parsed key object of a node id (its public key in hex) when this process has one cached, or
 * undefined: a lookup that never parses (parsing costs about as much as a verification). The relay
 * hands it to its signature thread so that the thread need not parse it again (decision 1090).
 */
export function cachedPublicKeyObject(nodeIdHex: string): KeyObject | undefined {
  return keyCache.get(nodeIdHex);
}

/** `checkPublicKey(...) === null`, memoised (the check decodes a point and multiplies by L). */
export function isAcceptablePublicKey(publicKey: Uint8Array): boolean {
  const id = Buffer.from(publicKey).toString('hex');
  const known = acceptableKeys.get(id);
  if (known !== undefined) return known;
  const ok = checkPublicKey(publicKey) === null;
  if (acceptableKeys.size >= ACCEPTABLE_KEY_MEMO_LIMIT) {
    const oldest = acceptableKeys.keys().next().value;
    if (oldest !== undefined) acceptableKeys.delete(oldest);
  }
  acceptableKeys.set(id, ok);
  return ok;
}

/**
 * Both candidate verifiers behind the same strict fence. Only `verifyEd25519` is used by the relay.
 * The key check runs last: it costs a scalar multiplication (a few ms) the first time a key is seen,
 * so garbage signatures are turned away by the cheap checks before it.
 */
export const ed25519Verifiers: Record<'nodeCrypto' | 'noble', Ed25519Verifier> = {
  nodeCrypto: (sig, message, publicKey, options = {}) => {
    if (publicKey.length !== 32 || !isCanonicalSignature(sig)) return false;
    let valid: boolean;
    try {
      valid = cryptoVerify(null, message, publicKeyObject(publicKey, options.publicKeyHex), sig);
    } catch {
      // OpenSSL may refuse to load bytes that are no curve point: that is a failed verification.
      return false;
    }
    return valid && (options.keyChecked === true || isAcceptablePublicKey(publicKey));
  },
  noble: (sig, message, publicKey, options = {}) => {
    if (publicKey.length !== 32 || !isCanonicalSignature(sig)) return false;
    return noble.verify(sig, message, publicKey, { zip215: false }) && (options.keyChecked === true || isAcceptablePublicKey(publicKey));
  },
};

/** The relay's one verifier (see docs/decisions/0101-ed25519-verifier.md). */
export const verifyEd25519: Ed25519Verifier = ed25519Verifiers.nodeCrypto;

/**
 * `verifyEd25519` with the signature check on libuv's thread pool (node:crypto's callback form), so
 * a server verifying the votes of several clients uses more than its one JavaScript thread and
 * answers other requests meanwhile (issue 18). Same fence, same answers.
 */
export function verifyEd25519Async(sig: Uint8Array, message: Uint8Array, publicKey: Uint8Array, options: KeyVerdict & KeyName = {}): Promise<boolean> {
  if (publicKey.length !== 32 || !isCanonicalSignature(sig)) return Promise.resolve(false);
  let key: KeyObject;
  try {
    key = publicKeyObject(publicKey, options.publicKeyHex);
  } catch {
    return Promise.resolve(false);
  }
  return new Promise((resolve) => {
    try {
      cryptoVerify(null, message, key, sig, (error, valid) => resolve(!error && valid && (options.keyChecked === true || isAcceptablePublicKey(publicKey))));
    } catch {
      resolve(false);
    }
  });
}

/** A secret seed made ready to sign with: its key object, and its public key, each made once. */
interface Signer {
  /** A copy of the seed it was made from: a caller that overwrote its array in place gets a new one. */
  readonly seed: Buffer;
  readonly key: KeyObject;
  readonly publicKey: Uint8Array;
}

/**
 * Signers by the seed array they were made from (its identity, checked against its bytes). OpenSSL 3
 * decodes a PKCS #8 key through its generic decoder, about 0.8 ms here, and deriving the public key
 * as much again, against 0.1 ms for the signature itself: a relay signing its own statements (each a
 * 2 ms stall of the event loop before this) and clients signing many votes with one key pay it once.
 * A WeakMap: a signer lives as long as the caller keeps the seed's array, and no seed is a key of
 * anything that outlives it.
 */
const signers = new WeakMap<Uint8Array, Signer>();

function signerOf(secretKey: Uint8Array): Signer {
  const kept = signers.get(secretKey);
  if (kept && kept.seed.equals(secretKey)) return kept;
  if (secretKey.length !== 32) {
    throw new RelayError(`an Ed25519 secret key is the 32-byte seed, got ${secretKey.length} bytes`);
  }
  const key = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, secretKey]), format: 'der', type: 'pkcs8' });
  const spki = createPublicKey(key).export({ format: 'der', type: 'spki' });
  const signer = { seed: Buffer.from(secretKey), key, publicKey: new Uint8Array(spki.subarray(SPKI_PREFIX.length)) };
  signers.set(secretKey, signer);
  return signer;
}

/** The raw 32-byte public key of a 32-byte secret seed. */
export function publicKeyFromSecret(secretKey: Uint8Array): Uint8Array {
  // A copy: the kept one is never handed out to be written to.
  return new Uint8Array(signerOf(secretKey).publicKey);
}

/** Signs `message` with a 32-byte secret seed (RFC 8032 Ed25519, deterministic); 64 bytes out. */
export function signEd25519(message: Uint8Array, secretKey: Uint8Array): Uint8Array {
  return new Uint8Array(cryptoSign(null, message, signerOf(secretKey).key));
}

/** A fresh random 32-byte secret seed (CSPRNG). */
export function randomSecretKey(): Uint8Array {
  return new Uint8Array(randomBytes(32));
}
