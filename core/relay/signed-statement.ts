import { canonicalJson } from './canonical-json.js';
import { publicKeyFromSecret, signEd25519, verifyEd25519 } from './ed25519.js';
import { HEX64_PATTERN, type Problem, RelayError, isPlainObject } from './problem.js';
import { isNodeId, nodeIdToPublicKey, publicKeyToNodeId } from './node-id.js';
import { isSignatureText } from './vote.js';

/**
 * Signed statements other than votes (x.item/1 authorship, x.slice/1 slice declarations, and the
 * x.register/1 and x.session/1 proofs): Ed25519 by the signer's node key over the UTF-8 bytes of the
 * RFC 8785 canonical JSON of the document without its top-level `sig`; `sig` is 64 bytes in
 * canonical unpadded base64url (86 characters), as for votes. Nothing is unsigned in them (they
 * have no `hint`), so any change to any field breaks the signature.
 */
export function statementSigningBytes(doc: Record<string, unknown>): Uint8Array {
  const signed = Object.fromEntries(Object.entries(doc).filter(([key, value]) => key !== 'sig' && value !== undefined));
  return new TextEncoder().encode(canonicalJson(signed));
}

/** True when `doc.sig` is `signer`'s signature over the document; false (never throws) otherwise. */
export function verifyStatement(doc: Record<string, unknown>, signer: string): boolean {
  if (!isNodeId(signer) || !isSignatureText(doc.sig)) return false;
  try {
    return verifyEd25519(new Uint8Array(Buffer.from(doc.sig, 'base64url')), statementSigningBytes(doc), nodeIdToPublicKey(signer));
  } catch {
    return false;
  }
}

/**
 * Signs a document with a 32-byte secret seed; returns it with `sig`. When `signer` is given, a key
 * that is not that node's throws `RelayError` (signing for the wrong node should fail loudly).
 */
export function signStatement<T extends Record<string, unknown>>(doc: T, secretKey: Uint8Array, signer?: string): T & { sig: string } {
  if (signer !== undefined) {
    const keyOf = publicKeyToNodeId(publicKeyFromSecret(secretKey));
    if (keyOf !== signer) throw new RelayError(`secret key belongs to node ${keyOf}, not to ${signer}`);
  }
  const { sig: _old, ...unsigned } = doc;
  const sig = Buffer.from(signEd25519(statementSigningBytes(unsigned), secretKey)).toString('base64url');
  return { ...(unsigned as T), sig };
}

/** Field checks shared by the statement parsers; each pushes neutral problems. */
export class FieldChecks {
  readonly problems: Problem[] = [];
  constructor(readonly input: Record<string, unknown>) {}

  has(key: string): boolean {
    return Object.prototype.hasOwnProperty.call(this.input, key) && this.input[key] !== undefined;
  }

  literal(key: string, expected: readonly string[]): void {
    if (!this.has(key)) this.problems.push({ path: [key], code: 'missing' });
    else if (!expected.includes(this.input[key] as string)) this.problems.push({ path: [key], code: 'not_one_of', input: this.input[key], expected });
  }

  /** `what` says what the hex names ("a node_id"). */
  hex64(key: string, what: string): void {
    if (!this.has(key)) this.problems.push({ path: [key], code: 'missing' });
    else if (typeof this.input[key] !== 'string' || !HEX64.test(this.input[key])) {
      this.problems.push({ path: [key], code: 'pattern_mismatch', input: this.input[key], expected: HEX64_PATTERN, note: what });
    }
  }

  string(key: string, maxChars: number): void {
    if (!this.has(key)) this.problems.push({ path: [key], code: 'missing' });
    else if (typeof this.input[key] !== 'string') this.problems.push({ path: [key], code: 'not_string', input: this.input[key] });
    else if ([...(this.input[key] as string)].length > maxChars) this.problems.push({ path: [key], code: 'too_long', input: this.input[key], limit: maxChars });
  }

  /** `unit` names what the number counts ("Unix milliseconds"). */
  wholeNumber(key: string, unit: string): void {
    const value = this.input[key];
    if (!this.has(key)) this.problems.push({ path: [key], code: 'missing' });
    else if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) this.problems.push({ path: [key], code: 'not_whole_number', input: value, note: unit });
  }

  signature(): void {
    if (!this.has('sig')) this.problems.push({ path: ['sig'], code: 'missing' });
    else if (!isSignatureText(this.input.sig)) this.problems.push({ path: ['sig'], code: 'signature_text', input: this.input.sig });
  }

  /** Refuses keys outside `known` (they would be signed but meaningless). */
  onlyKnown(known: ReadonlySet<string>): void {
    for (const key of Object.keys(this.input)) {
      if (!known.has(key)) this.problems.push({ path: [key], code: 'extra', input: this.input[key] });
    }
  }
}

const HEX64 = new RegExp(HEX64_PATTERN);

export { isPlainObject };
