import { createHash, createPublicKey, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { claimId } from './claim.js';
import { RelayError } from './problem.js';
import { authorshipMismatch, parseItemAuthorship, signItemAuthorship, verifyItemAuthorship } from './item-authorship.js';
import { generateNodeKey } from './node-id.js';
import { quorumSetHash } from './quorum-set.js';
import { statementSigningBytes } from './signed-statement.js';
import { parseSliceDeclaration, signSliceDeclaration, supersedes, verifySliceDeclaration } from './slice-declaration.js';

const author = generateNodeKey();
const other = generateNodeKey();
const third = generateNodeKey();
const item = claimId({ kind: 'statement', title: 'boots', body: '' });

/** Flips one bit of a base64url signature (the last character keeps its 4 zero bits: flip an early one). */
function flipSig(sig: string): string {
  const bytes = Buffer.from(sig, 'base64url');
  bytes[0] = (bytes[0] ?? 0) ^ 1;
  return bytes.toString('base64url');
}

describe('statementSigningBytes', () => {
  it('is the canonical JSON (RFC 8785) of the document without sig', () => {
    const text = new TextDecoder().decode(statementSigningBytes({ type: 'claim', schema: 'x.item/1', sig: 'x', item, author: author.nodeId }));
    expect(text).toBe(`{"author":"${author.nodeId}","item":"${item}","schema":"x.item/1","type":"claim"}`);
  });
});

describe('x.item/1 authorship', () => {
  const claimDoc = signItemAuthorship({ schema: 'x.item/1', item, type: 'claim', author: author.nodeId }, author.secretKey);
  const fileDoc = signItemAuthorship({ schema: 'x.item/1', item: 'a'.repeat(64), type: 'file', author: author.nodeId, title: 'fw.bin', media_type: 'application/octet-stream' }, author.secretKey);

  it('verifies as signed, whatever the key order, and survives JSON', () => {
    expect(verifyItemAuthorship(claimDoc)).toBe(true);
    const { sig, ...rest } = fileDoc;
    const reordered = JSON.parse(JSON.stringify({ sig, ...rest })) as unknown;
    const parsed = parseItemAuthorship(reordered);
    expect(parsed.ok && verifyItemAuthorship(parsed.value)).toBe(true);
  });

  it('fails when any signed field or any bit of sig changes', () => {
    expect(verifyItemAuthorship({ ...claimDoc, item: 'b'.repeat(64) })).toBe(false);
    expect(verifyItemAuthorship({ ...claimDoc, author: other.nodeId })).toBe(false);
    expect(verifyItemAuthorship({ ...claimDoc, sig: flipSig(claimDoc.sig) })).toBe(false);
    if (fileDoc.type !== 'file') throw new Error('a file statement');
    expect(verifyItemAuthorship({ ...fileDoc, title: 'other.bin' })).toBe(false);
    expect(verifyItemAuthorship({ ...fileDoc, media_type: 'text/html' })).toBe(false);
  });

  it('refuses to sign for another node', () => {
    expect(() => signItemAuthorship({ schema: 'x.item/1', item, type: 'claim', author: other.nodeId }, author.secretKey)).toThrow(RelayError);
  });

  it('parses strictly: unknown keys, a title on a claim, a file without its title, a bad sig', () => {
    const problems = (input: unknown) => {
      const r = parseItemAuthorship(input);
      return r.ok ? [] : r.problems.map((p) => `${p.path.join('.')}:${p.code}`);
    };
    expect(problems({ ...claimDoc, extra: 1 })).toEqual(['extra:extra']);
    expect(problems({ ...claimDoc, title: 'boots' })).toEqual(['title:extra']);
    expect(problems({ ...claimDoc, type: 'file' })).toEqual(['title:missing', 'media_type:missing']);
    expect(problems({ ...claimDoc, sig: 'short' })).toEqual(['sig:signature_text']);
    expect(problems([])).toEqual([':not_object']);
  });

  it('names the first field that disagrees with the item', () => {
    const base = { id: item, type: 'claim' as const, author: author.nodeId, title: 'boots', media_type: null };
    expect(authorshipMismatch(claimDoc, base)).toBeNull();
    expect(authorshipMismatch(claimDoc, { ...base, id: 'c'.repeat(64) })?.path).toEqual(['item']);
    expect(authorshipMismatch(claimDoc, { ...base, author: other.nodeId })?.path).toEqual(['author']);
    expect(authorshipMismatch(claimDoc, { ...base, type: 'file' })?.path).toEqual(['type']);
    const file = { id: 'a'.repeat(64), type: 'file' as const, author: author.nodeId, title: 'fw.bin', media_type: 'application/octet-stream' };
    expect(authorshipMismatch(fileDoc, file)).toBeNull();
    expect(authorshipMismatch(fileDoc, { ...file, title: 'renamed' })?.path).toEqual(['title']);
    expect(authorshipMismatch(fileDoc, { ...file, media_type: 'text/html' })?.path).toEqual(['media_type']);
  });
});

describe('x.slice/1 declarations', () => {
  const slice = { t: 1, v: [third.nodeId, other.nodeId], i: [] };
  const doc = signSliceDeclaration({ node_id: author.nodeId, slice, updated_ms: 1_795_176_000_000 }, author.secretKey);

  it('signs the normalised slice with its hash, and verifies', () => {
    expect(doc.slice.v).toEqual([third.nodeId, other.nodeId].sort());
    expect(doc.slice_hash).toBe(quorumSetHash(slice));
    expect(verifySliceDeclaration(doc)).toBe(true);
  });

  it('fails when the slice, the node, the time or the signature changes', () => {
    expect(verifySliceDeclaration({ ...doc, slice: { t: 2, v: doc.slice.v, i: [] } })).toBe(false);
    expect(verifySliceDeclaration({ ...doc, node_id: other.nodeId })).toBe(false);
    expect(verifySliceDeclaration({ ...doc, updated_ms: doc.updated_ms + 1 })).toBe(false);
    expect(verifySliceDeclaration({ ...doc, sig: flipSig(doc.sig) })).toBe(false);
  });

  it('refuses a slice_hash that is not the hash of the slice, and a slice naming its own node', () => {
    const wrongHash = parseSliceDeclaration({ ...doc, slice_hash: 'd'.repeat(64) });
    expect(wrongHash.ok ? [] : wrongHash.problems.map((p) => p.path.join('.'))).toEqual(['slice_hash']);
    const self = parseSliceDeclaration({ ...doc, slice: { t: 1, v: [author.nodeId], i: [] } });
    expect(self.ok).toBe(false);
    expect(() => signSliceDeclaration({ node_id: author.nodeId, slice: { t: 1, v: [author.nodeId], i: [] }, updated_ms: 1 }, author.secretKey)).toThrow(RelayError);
  });

  it('orders declarations by updated_ms, then by hash', () => {
    expect(supersedes({ updated_ms: 2, slice_hash: 'a' }, { updated_ms: 1, slice_hash: 'b' })).toBe(true);
    expect(supersedes({ updated_ms: 1, slice_hash: 'b' }, { updated_ms: 1, slice_hash: 'a' })).toBe(true);
    expect(supersedes({ updated_ms: 1, slice_hash: 'a' }, { updated_ms: 1, slice_hash: 'a' })).toBe(false);
  });
});

/**
 * docs/relay-api.md, "Derived identifiers and signed documents", followed by hand with node:crypto
 * alone (no core helper), so an outside client written from the document computes the same.
 */
describe('the documented definitions, computed without the core', () => {
  const [a, b, c] = [other.nodeId, third.nodeId, author.nodeId].sort() as [string, string, string];

  it('slice_hash: SHA-256 of the canonical JSON of the normal form (one-entry inner sets lifted, v sorted)', () => {
    const normalText = `{"i":[],"t":1,"v":["${a}","${b}","${c}"]}`;
    const expected = createHash('sha256').update(normalText, 'utf8').digest('hex');
    expect(quorumSetHash({ t: 1, v: [c, a], i: [{ t: 1, v: [b], i: [] }] })).toBe(expected);
  });

  it('x.item/1 and x.slice/1: Ed25519 over the canonical JSON without sig, sig in unpadded base64url', () => {
    const rawVerify = (text: string, sig: string, nodeId: string) =>
      verify(null, Buffer.from(text, 'utf8'), createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(nodeId, 'hex').toString('base64url') }, format: 'jwk' }), Buffer.from(sig, 'base64url'));
    const claimDoc = signItemAuthorship({ schema: 'x.item/1', item, type: 'claim', author: author.nodeId }, author.secretKey);
    expect(claimDoc.sig).toMatch(/^[A-Za-z0-9_-]{86}$/);
    expect(rawVerify(`{"author":"${author.nodeId}","item":"${item}","schema":"x.item/1","type":"claim"}`, claimDoc.sig, author.nodeId)).toBe(true);
    const [x, y] = [other.nodeId, third.nodeId].sort() as [string, string];
    const declaration = signSliceDeclaration({ node_id: author.nodeId, slice: { t: 1, v: [y, x], i: [] }, updated_ms: 1_795_176_000_123 }, author.secretKey);
    const hash = createHash('sha256').update(`{"i":[],"t":1,"v":["${x}","${y}"]}`, 'utf8').digest('hex');
    const text = `{"node_id":"${author.nodeId}","schema":"x.slice/1","slice":{"i":[],"t":1,"v":["${x}","${y}"]},"slice_hash":"${hash}","updated_ms":1795176000123}`;
    expect(rawVerify(text, declaration.sig, author.nodeId)).toBe(true);
  });
});
