import { checkPublicKey, isSmallOrderPublicKey, publicKeyFromSecret, randomSecretKey } from './ed25519.js';
import { RelayError } from './problem.js';

/**
 * A node's identity: `node_id` is its raw 32-byte Ed25519 public key as 64 lower-case hex characters.
 * Lower case only, so one key has exactly one id (ids are compared as strings everywhere).
 */
const NODE_ID = /^[0-9a-f]{64}$/;

/** True for 64 lower-case hex characters. Says nothing about the key: see `nodeIdProblem`. */
export function isNodeId(s: unknown): s is string {
  return typeof s === 'string' && NODE_ID.test(s);
}

/** The raw public key bytes of a node id. Throws `RelayError` for a malformed id. */
export function nodeIdToPublicKey(nodeId: string): Uint8Array {
  if (!isNodeId(nodeId)) throw new RelayError(`not a node id (64 lower-case hex characters): ${JSON.stringify(nodeId)}`);
  return new Uint8Array(Buffer.from(nodeId, 'hex'));
}

/** The node id of raw public key bytes. */
export function publicKeyToNodeId(publicKey: Uint8Array): string {
  if (publicKey.length !== 32) throw new RelayError(`an Ed25519 public key has 32 bytes, got ${publicKey.length}`);
  return Buffer.from(publicKey).toString('hex');
}

/**
 * Registration check: a human-readable reason to refuse this node id, or null when it may register.
 * Refuses malformed ids, small-order keys (they verify forged votes), non-canonical and mixed-order keys.
 */
export function nodeIdProblem(nodeId: unknown): string | null {
  if (!isNodeId(nodeId)) return 'node_id must be 64 lower-case hex characters (a raw Ed25519 public key)';
  const problem = checkPublicKey(nodeIdToPublicKey(nodeId));
  switch (problem) {
    case null:
      return null;
    case 'wrong-length':
      return 'node_id must encode 32 bytes';
    case 'non-canonical-encoding':
      return 'node_id is a non-canonical encoding of a curve point';
    case 'not-a-curve-point':
      return 'node_id is not a point on the Ed25519 curve';
    case 'small-order':
      return 'node_id is a small-order point, which would verify forged signatures';
    case 'mixed-order':
      return 'node_id has a small-order component; real Ed25519 keys never do';
  }
}

export { isSmallOrderPublicKey };

/** A node's key pair: the id (public key hex) and the 32-byte secret seed. */
export interface NodeKey {
  nodeId: string;
  secretKey: Uint8Array;
}

/** A fresh random node key. */
export function generateNodeKey(): NodeKey {
  const secretKey = randomSecretKey();
  return { nodeId: publicKeyToNodeId(publicKeyFromSecret(secretKey)), secretKey };
}

/** The node key of a known 32-byte secret seed (tests, scenario files with fixed identities). */
export function nodeKeyFromSecret(secretKey: Uint8Array): NodeKey {
  return { nodeId: publicKeyToNodeId(publicKeyFromSecret(secretKey)), secretKey };
}
