import { type Validated, isPlainObject, notAnObject, unwrap } from './problem.js';
import { isNodeId } from './node-id.js';
import { type QuorumSet, normalizeQuorumSet, quorumSetHash, validateQuorumSet } from './quorum-set.js';
import { FieldChecks, signStatement, verifyStatement } from './signed-statement.js';

/**
 * x.slice/1: a node's signed declaration of its published slice, so relays forward the node's own
 * word instead of asserting it, and every relay checks it against the node's key.
 *
 * ```
 * { "schema": "x.slice/1", "node_id": <node_id>, "slice": <quorum set>, "slice_hash": <quorumSetHash(slice)>,
 *   "updated_ms": <Unix ms of the declaration>, "sig": <Ed25519 by node_id over the RFC 8785 bytes without sig> }
 * ```
 * Between two declarations of one node, the larger `updated_ms` wins, and on a tie the larger
 * `slice_hash` (bytewise), so every relay keeps the same one whatever order they arrive in.
 */
export const SLICE_DECLARATION_SCHEMA = 'x.slice/1';

export interface SliceDeclaration {
  schema: typeof SLICE_DECLARATION_SCHEMA;
  node_id: string;
  slice: QuorumSet;
  slice_hash: string;
  updated_ms: number;
  sig: string;
}

export type UnsignedSliceDeclaration = Omit<SliceDeclaration, 'sig' | 'slice_hash' | 'schema'> & { slice_hash?: string; schema?: typeof SLICE_DECLARATION_SCHEMA };

const KNOWN = new Set(['schema', 'node_id', 'slice', 'slice_hash', 'updated_ms', 'sig']);

/**
 * Parses an untrusted x.slice/1 document (the signature is NOT checked: `verifySliceDeclaration`).
 * The slice must pass the sanity rules (not naming its own node) and `slice_hash` must be its hash.
 */
export function parseSliceDeclaration(input: unknown): Validated<SliceDeclaration> {
  if (!isPlainObject(input)) return { ok: false, problems: [notAnObject([], input)] };
  const f = new FieldChecks(input);
  f.literal('schema', [SLICE_DECLARATION_SCHEMA]);
  f.hex64('node_id', 'a node_id');
  let slice: QuorumSet | undefined;
  if (!f.has('slice')) f.problems.push({ path: ['slice'], code: 'missing' });
  else {
    const parsed = validateQuorumSet(input.slice, isNodeId(input.node_id) ? { self: input.node_id } : {});
    if (parsed.ok) slice = parsed.value;
    else for (const problem of parsed.problems) f.problems.push({ ...problem, path: ['slice', ...problem.path] });
  }
  f.hex64('slice_hash', 'quorumSetHash of the slice');
  if (slice && typeof input.slice_hash === 'string' && input.slice_hash !== quorumSetHash(slice)) {
    f.problems.push({ path: ['slice_hash'], code: 'slice_hash_mismatch', input: input.slice_hash, expected: quorumSetHash(slice) });
  }
  f.wholeNumber('updated_ms', 'Unix milliseconds');
  f.signature();
  f.onlyKnown(KNOWN);
  if (f.problems.length > 0 || !slice) return { ok: false, problems: f.problems };
  return {
    ok: true,
    value: { schema: SLICE_DECLARATION_SCHEMA, node_id: input.node_id as string, slice, slice_hash: input.slice_hash as string, updated_ms: input.updated_ms as number, sig: input.sig as string },
  };
}

/** True when `doc.sig` is the declaring node's signature over the declaration. */
export function verifySliceDeclaration(doc: SliceDeclaration): boolean {
  return verifyStatement(doc as unknown as Record<string, unknown>, doc.node_id);
}

/** Signs a declaration with the node's seed; the slice is normalised and `slice_hash` filled in. */
export function signSliceDeclaration(unsigned: UnsignedSliceDeclaration, secretKey: Uint8Array): SliceDeclaration {
  const slice = normalizeQuorumSet(unwrap(validateQuorumSet(unsigned.slice, { self: unsigned.node_id }), 'slice'));
  const doc = { schema: SLICE_DECLARATION_SCHEMA, node_id: unsigned.node_id, slice, slice_hash: quorumSetHash(slice), updated_ms: unsigned.updated_ms };
  return unwrap(parseSliceDeclaration(signStatement(doc, secretKey, unsigned.node_id)), 'slice declaration');
}

/** True when declaration `a` supersedes `b` (later `updated_ms`; on a tie the larger hash). */
export function supersedes(a: { updated_ms: number; slice_hash: string }, b: { updated_ms: number; slice_hash: string }): boolean {
  return a.updated_ms > b.updated_ms || (a.updated_ms === b.updated_ms && a.slice_hash > b.slice_hash);
}
