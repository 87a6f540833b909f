import { canonicalJson } from '../../../core/relay/canonical-json.js';
import { isSignatureText } from '../../../core/relay/vote.js';
import { nodeIdToPublicKey } from '../../../core/relay/node-id.js';
import { signEd25519, verifyEd25519 } from '../../../core/relay/ed25519.js';
import type { Problem } from '../../../core/relay/problem.js';
import { invalidInputAt } from './relay-errors.js';

/**
 * Registration (`x.register/1`) and session (`x.session/1`) documents are signed like votes:
 * Ed25519 by the node key over the RFC 8785 canonical JSON of the document without `sig`, the
 * signature written as unpadded base64url. Signing a document that names this relay's base URL and
 * a fresh `created_at` is how a client proves it holds the key of the node id it claims.
 */
export function signedDocumentBytes(doc: Record<string, unknown>): Uint8Array {
  const { sig: _sig, ...signed } = doc;
  return new TextEncoder().encode(canonicalJson(signed));
}

/** True when `doc.sig` is `nodeId`'s signature over the document; false (never throws) otherwise. */
export function verifySignedDocument(doc: Record<string, unknown>, nodeId: string): boolean {
  if (!isSignatureText(doc.sig)) return false;
  try {
    return verifyEd25519(new Uint8Array(Buffer.from(doc.sig, 'base64url')), signedDocumentBytes(doc), nodeIdToPublicKey(nodeId));
  } catch {
    return false;
  }
}

/** Signs a document with a 32-byte seed; returns it with `sig` added (used for the relay's own registration and by tests). */
export function signDocument<T extends Record<string, unknown>>(doc: T, secretKey: Uint8Array): T & { sig: string } {
  const sig = Buffer.from(signEd25519(signedDocumentBytes(doc), secretKey)).toString('base64url');
  return { ...doc, sig };
}

/** Refuses input that failed a core validation (`invalid_input`), its problems located under `where`. */
export function throwCoreProblems(problems: readonly Problem[], where: (string | number)[]): never {
  throw invalidInputAt(where, problems);
}
